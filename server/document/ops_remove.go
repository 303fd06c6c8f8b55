package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// removeOp removes a member of an object or an element of an array.
type removeOp struct {
	parent     crdt.Ticket
	createdAt  crdt.Ticket
	executedAt crdt.Ticket
}

func decodeRemove(op *api.Operation_Remove) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty remove", ErrInvalidOperation)
	}
	var o removeOp
	var err error
	if o.parent, err = ticketFromPB(op.GetParentCreatedAt()); err != nil {
		return nil, fmt.Errorf("remove parent: %w", err)
	}
	if o.createdAt, err = ticketFromPB(op.GetCreatedAt()); err != nil {
		return nil, fmt.Errorf("remove target: %w", err)
	}
	if o.executedAt, err = ticketFromPB(op.GetExecutedAt()); err != nil {
		return nil, fmt.Errorf("remove executed at: %w", err)
	}
	return &o, nil
}

// Execute implements Operation, as the SDK's RemoveOperation: the target is registered as
// removed even when it already was (or the removal is not newer than it), which the SDK's
// document size counts again.
func (o *removeOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	if o.createdAt == root.Object().CreatedAt() {
		return fmt.Errorf("%w: remove of the root object", ErrRemoveRoot)
	}
	parent, ok := root.Find(o.parent)
	if !ok {
		return fmt.Errorf("%w: remove target %s", ErrElementNotFound, o.parent)
	}
	var elem crdt.Element
	switch c := parent.(type) {
	case *crdt.Object:
		if elem, ok = c.RemoveChild(o.createdAt, o.executedAt); !ok {
			return fmt.Errorf("%w: remove of %s, not in the object", ErrElementNotFound, o.createdAt)
		}
	case *crdt.Array:
		var err error
		if elem, err = c.RemoveChild(o.createdAt, o.executedAt); err != nil {
			return fmt.Errorf("%w: remove: %w", ErrElementNotFound, err)
		}
	default:
		return fmt.Errorf("%w: remove on a %T", ErrWrongElementType, parent)
	}
	root.RegisterRemovedElement(elem)
	return nil
}
