package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Operation is one decoded operation of a change, ready to run on a root.
type Operation interface {
	// Execute applies the operation to root. vv is the version vector of the change that
	// carries it (the SDK passes it to Text and Tree edits to tell concurrent edits apart).
	Execute(root *crdt.Root, vv crdt.VersionVector) error
}

// decodeOperation turns a wire operation into an Operation, refusing empty or unknown bodies
// (the SDK would throw on them and stop syncing).
func decodeOperation(op *api.Operation) (Operation, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: nil operation", ErrInvalidOperation)
	}
	switch body := op.GetBody().(type) {
	case *api.Operation_Set_:
		return decodeSet(body.Set)
	case *api.Operation_Add_:
		return decodeAdd(body.Add)
	case *api.Operation_Move_:
		return decodeMove(body.Move)
	case *api.Operation_Remove_:
		return decodeRemove(body.Remove)
	case *api.Operation_Edit_:
		if body.Edit == nil {
			return nil, fmt.Errorf("%w: empty edit", ErrInvalidOperation)
		}
		return decodeEdit(body.Edit)
	case *api.Operation_Style_:
		if body.Style == nil {
			return nil, fmt.Errorf("%w: empty style", ErrInvalidOperation)
		}
		return decodeStyle(body.Style)
	case *api.Operation_Increase_:
		return decodeIncrease(body.Increase)
	case *api.Operation_TreeEdit_:
		if body.TreeEdit == nil {
			return nil, fmt.Errorf("%w: empty tree edit", ErrInvalidOperation)
		}
		return decodeTreeEdit(body.TreeEdit)
	case *api.Operation_TreeStyle_:
		if body.TreeStyle == nil {
			return nil, fmt.Errorf("%w: empty tree style", ErrInvalidOperation)
		}
		return decodeTreeStyle(body.TreeStyle)
	case *api.Operation_ArraySet_:
		return decodeArraySet(body.ArraySet)
	default:
		return nil, fmt.Errorf("%w: operation without a known body", ErrInvalidOperation)
	}
}
