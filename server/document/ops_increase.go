package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// increaseOp adds to a counter.
type increaseOp struct {
	parent crdt.Ticket
	delta  *crdt.Primitive
	// actor is who increases a dedup counter (counted once).
	actor string
}

func decodeIncrease(op *api.Operation_Increase) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: empty increase", ErrInvalidOperation)
	}
	parent, err := ticketFromPB(op.GetParentCreatedAt())
	if err != nil {
		return nil, fmt.Errorf("increase parent: %w", err)
	}
	if _, err := ticketFromPB(op.GetExecutedAt()); err != nil {
		return nil, fmt.Errorf("increase executed at: %w", err)
	}
	value, err := simpleFromPB(op.GetValue())
	if err != nil {
		return nil, fmt.Errorf("increase value: %w", err)
	}
	delta, ok := value.(*crdt.Primitive)
	if !ok || !delta.IsNumeric() {
		return nil, fmt.Errorf("%w: increase by a non-number", ErrInvalidOperation)
	}
	return &increaseOp{parent: parent, delta: delta, actor: op.GetActor()}, nil
}

// Execute implements Operation, as the SDK's IncreaseOperation.
func (o *increaseOp) Execute(root *crdt.Root, _ crdt.VersionVector) error {
	counter, err := findParent[*crdt.Counter](root, o.parent, "increase")
	if err != nil {
		return err
	}
	if counter.Type() == crdt.CounterIntDedup {
		err = counter.IncreaseDedup(o.delta, o.actor)
	} else {
		err = counter.Increase(o.delta)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOperation, err)
	}
	return nil
}
