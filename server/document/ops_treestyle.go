package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// treeStyle sets attributes on, or removes attributes from, the elements of a tree range.
type treeStyle struct {
	parent     crdt.Ticket
	from, to   crdt.TreePos
	set        bool
	attrs      []crdt.TreeAttr
	remove     []string
	executedAt crdt.Ticket
}

// decodeTreeStyle reads a TreeStyle: a removal when it names attributes to remove, else a
// style (an empty style removes nothing but still gives the elements an attribute table, as
// in the SDK).
func decodeTreeStyle(pb *api.Operation_TreeStyle) (Operation, error) {
	parent, err := treeTicketFromPB(pb.GetParentCreatedAt(), "style parent_created_at")
	if err != nil {
		return nil, err
	}
	from, err := treePosFromPB(pb.GetFrom(), "style from")
	if err != nil {
		return nil, err
	}
	to, err := treePosFromPB(pb.GetTo(), "style to")
	if err != nil {
		return nil, err
	}
	executedAt, err := treeTicketFromPB(pb.GetExecutedAt(), "style executed_at")
	if err != nil {
		return nil, err
	}
	op := &treeStyle{parent: parent, from: from, to: to, executedAt: executedAt}
	if len(pb.GetAttributesToRemove()) > 0 {
		op.remove = append([]string(nil), pb.GetAttributesToRemove()...)
		return op, nil
	}
	if len(pb.GetAttributes()) == 0 {
		return op, nil
	}
	op.set = true
	keys := make([]string, 0, len(pb.GetAttributes()))
	for k := range pb.GetAttributes() {
		// The SDK builds a plain object of the attributes, where "__proto__" is no key.
		if k != "__proto__" {
			keys = append(keys, k)
		}
	}
	crdt.OrderTreeAttrKeys(keys)
	for _, k := range keys {
		v := pb.GetAttributes()[k]
		if !crdt.ValidTreeAttrValue(v) {
			return nil, fmt.Errorf("%w: tree style attribute %q: value is not JSON", ErrInvalidOperation, k)
		}
		op.attrs = append(op.attrs, crdt.TreeAttr{Key: k, Value: v})
	}
	return op, nil
}

// Execute implements Operation.
func (op *treeStyle) Execute(root *crdt.Root, vv crdt.VersionVector) error {
	tree, err := findTree(root, op.parent)
	if err != nil {
		return err
	}
	var (
		pairs []crdt.GCPair
		diff  crdt.DataSize
	)
	if op.set {
		pairs, diff, err = tree.Style(op.from, op.to, op.attrs, op.executedAt, vv)
	} else {
		pairs, diff, err = tree.RemoveStyle(op.from, op.to, op.remove, op.executedAt, vv)
	}
	if err != nil {
		return fmt.Errorf("tree style at %s: %w", op.executedAt, treeExecErr(err))
	}
	registerTreePairs(root, diff, pairs)
	return nil
}
