package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// moveOp moves an array element after a position.
type moveOp struct {
	parent     crdt.Ticket
	prev       crdt.Ticket
	createdAt  crdt.Ticket
	executedAt crdt.Ticket
}

func decodeMove(op *api.Operation_Move) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty move", ErrInvalidOperation)
	}
	var o moveOp
	var err error
	if o.parent, err = ticketFromPB(op.GetParentCreatedAt()); err != nil {
		return nil, fmt.Errorf("move parent: %w", err)
	}
	if o.prev, err = ticketFromPB(op.GetPrevCreatedAt()); err != nil {
		return nil, fmt.Errorf("move prev: %w", err)
	}
	if o.createdAt, err = ticketFromPB(op.GetCreatedAt()); err != nil {
		return nil, fmt.Errorf("move target: %w", err)
	}
	if o.executedAt, err = ticketFromPB(op.GetExecutedAt()); err != nil {
		return nil, fmt.Errorf("move executed at: %w", err)
	}
	return &o, nil
}

// Execute implements Operation, as the SDK's MoveOperation: the position the element
// leaves (or a losing move's own position) is registered for collection.
func (o *moveOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	arr, err := findParent[*crdt.Array](root, o.parent, "move")
	if err != nil {
		return err
	}
	dead, err := arr.MoveAfter(o.prev, o.createdAt, o.executedAt)
	if err != nil {
		return fmt.Errorf("%w: move: %w", ErrElementNotFound, err)
	}
	if dead != nil {
		root.RegisterGCPair(crdt.GCPair{Parent: arr, Child: dead})
	}
	return nil
}
