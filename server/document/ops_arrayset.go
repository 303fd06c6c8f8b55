package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// arraySetOp replaces an array element with a new value.
type arraySetOp struct {
	parent     crdt.Ticket
	createdAt  crdt.Ticket
	value      crdt.Element
	executedAt crdt.Ticket
}

func decodeArraySet(op *api.Operation_ArraySet) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty array set", ErrInvalidOperation)
	}
	var o arraySetOp
	var err error
	if o.parent, err = ticketFromPB(op.GetParentCreatedAt()); err != nil {
		return nil, fmt.Errorf("array set parent: %w", err)
	}
	if o.createdAt, err = ticketFromPB(op.GetCreatedAt()); err != nil {
		return nil, fmt.Errorf("array set target: %w", err)
	}
	if o.executedAt, err = ticketFromPB(op.GetExecutedAt()); err != nil {
		return nil, fmt.Errorf("array set executed at: %w", err)
	}
	if o.value, err = simpleFromPB(op.GetValue()); err != nil {
		return nil, fmt.Errorf("array set value: %w", err)
	}
	return &o, nil
}

// Execute implements Operation, as the SDK's ArraySetOperation: the new value goes right
// after the old one, which is marked removed but, as in the SDK, not registered for
// collection; the new value is indexed without a parent.
func (o *arraySetOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	arr, err := findParent[*crdt.Array](root, o.parent, "array set")
	if err != nil {
		return err
	}
	if err := checkNotRoot(root, o.value); err != nil {
		return err
	}
	if !arr.HasElement(o.createdAt) {
		return fmt.Errorf("%w: array set of %s, not in the array", ErrElementNotFound, o.createdAt)
	}
	if err := arr.Set(o.createdAt, o.value, o.executedAt); err != nil {
		return fmt.Errorf("%w: array set: %w", ErrElementNotFound, err)
	}
	root.RegisterElement(o.value, nil)
	return nil
}
