package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// setOp puts a value under a key of an object.
type setOp struct {
	parent     crdt.Ticket
	key        string
	value      crdt.Element
	executedAt crdt.Ticket
}

func decodeSet(op *api.Operation_Set) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty set", ErrInvalidOperation)
	}
	parent, err := ticketFromPB(op.GetParentCreatedAt())
	if err != nil {
		return nil, fmt.Errorf("set parent: %w", err)
	}
	executedAt, err := ticketFromPB(op.GetExecutedAt())
	if err != nil {
		return nil, fmt.Errorf("set executed at: %w", err)
	}
	value, err := simpleFromPB(op.GetValue())
	if err != nil {
		return nil, fmt.Errorf("set value: %w", err)
	}
	return &setOp{parent: parent, key: op.GetKey(), value: value, executedAt: executedAt}, nil
}

// Execute implements Operation, as the SDK's SetOperation for a remote change: the value
// wins the key if it is newer than the current holder, which is then removed; a value that
// loses is stored removed.
func (o *setOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	obj, err := findParent[*crdt.Object](root, o.parent, "set")
	if err != nil {
		return err
	}
	if err := checkNotRoot(root, o.value); err != nil {
		return err
	}
	displaced := obj.Set(o.key, o.value, o.executedAt)
	root.RegisterElement(o.value, obj)
	if displaced != nil {
		root.RegisterRemovedElement(displaced)
	}
	if o.value.IsRemoved() {
		root.RegisterRemovedElement(o.value)
	}
	return nil
}

// findParent looks up the operation's target and checks its type.
func findParent[T crdt.Element](root *crdt.Root, at crdt.Ticket, op string) (T, error) {
	var zero T
	elem, ok := root.Find(at)
	if !ok {
		return zero, fmt.Errorf("%w: %s target %s", ErrElementNotFound, op, at)
	}
	t, ok := elem.(T)
	if !ok {
		return zero, fmt.Errorf("%w: %s on a %T", ErrWrongElementType, op, elem)
	}
	return t, nil
}

// checkNotRoot refuses a value that carries the root object's identity (itself or below):
// registering it would replace the root in the document's index.
func checkNotRoot(root *crdt.Root, value crdt.Element) error {
	id := root.Object().CreatedAt()
	if value.CreatedAt() == id {
		return fmt.Errorf("%w: value created at the root's ticket", ErrRemoveRoot)
	}
	if c, ok := value.(crdt.Container); ok {
		found := false
		c.Descendants(func(e crdt.Element, _ crdt.Container) bool {
			found = found || e.CreatedAt() == id
			return false
		})
		if found {
			return fmt.Errorf("%w: value holds an element created at the root's ticket", ErrRemoveRoot)
		}
	}
	return nil
}
