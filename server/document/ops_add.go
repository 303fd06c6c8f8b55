package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// addOp inserts a value into an array after a position.
type addOp struct {
	parent     crdt.Ticket
	prev       crdt.Ticket
	value      crdt.Element
	executedAt crdt.Ticket
}

func decodeAdd(op *api.Operation_Add) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty add", ErrInvalidOperation)
	}
	parent, err := ticketFromPB(op.GetParentCreatedAt())
	if err != nil {
		return nil, fmt.Errorf("add parent: %w", err)
	}
	prev, err := ticketFromPB(op.GetPrevCreatedAt())
	if err != nil {
		return nil, fmt.Errorf("add prev: %w", err)
	}
	executedAt, err := ticketFromPB(op.GetExecutedAt())
	if err != nil {
		return nil, fmt.Errorf("add executed at: %w", err)
	}
	value, err := simpleFromPB(op.GetValue())
	if err != nil {
		return nil, fmt.Errorf("add value: %w", err)
	}
	return &addOp{parent: parent, prev: prev, value: value, executedAt: executedAt}, nil
}

// Execute implements Operation, as the SDK's AddOperation.
func (o *addOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	arr, err := findParent[*crdt.Array](root, o.parent, "add")
	if err != nil {
		return err
	}
	if err := checkNotRoot(root, o.value); err != nil {
		return err
	}
	if err := arr.InsertAfter(o.prev, o.value, o.executedAt); err != nil {
		return fmt.Errorf("%w: add: %w", ErrElementNotFound, err)
	}
	root.RegisterElement(o.value, arr)
	return nil
}
