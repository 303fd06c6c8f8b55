package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// treeEdit replaces a range of a tree with contents, splitting elements splitLevel levels up.
type treeEdit struct {
	parent     crdt.Ticket
	from, to   crdt.TreePos
	contents   []*crdt.TreeNode
	splitLevel int
	executedAt crdt.Ticket
}

// decodeTreeEdit reads a TreeEdit. Its created_at_map_by_actor is not used: the SDK 0.7.7
// tells concurrent edits apart by the change's version vector alone.
func decodeTreeEdit(pb *api.Operation_TreeEdit) (Operation, error) {
	parent, err := treeTicketFromPB(pb.GetParentCreatedAt(), "edit parent_created_at")
	if err != nil {
		return nil, err
	}
	from, err := treePosFromPB(pb.GetFrom(), "edit from")
	if err != nil {
		return nil, err
	}
	to, err := treePosFromPB(pb.GetTo(), "edit to")
	if err != nil {
		return nil, err
	}
	executedAt, err := treeTicketFromPB(pb.GetExecutedAt(), "edit executed_at")
	if err != nil {
		return nil, err
	}
	contents, err := treeContentsFromPB(pb.GetContents())
	if err != nil {
		return nil, err
	}
	return &treeEdit{
		parent: parent, from: from, to: to, contents: contents,
		splitLevel: int(pb.GetSplitLevel()), executedAt: executedAt,
	}, nil
}

// Execute implements Operation.
func (op *treeEdit) Execute(root *crdt.Root, vv crdt.VersionVector) error {
	tree, err := findTree(root, op.parent)
	if err != nil {
		return err
	}
	// The tree takes the nodes over: give it copies so the operation stays reusable.
	var contents []*crdt.TreeNode
	if len(op.contents) > 0 {
		contents = make([]*crdt.TreeNode, len(op.contents))
		for i, c := range op.contents {
			contents[i] = c.DeepCopy()
		}
	}
	pairs, diff, err := tree.Edit(op.from, op.to, contents, op.splitLevel, op.executedAt, vv)
	if err != nil {
		return fmt.Errorf("tree edit at %s: %w", op.executedAt, treeExecErr(err))
	}
	registerTreePairs(root, diff, pairs)
	return nil
}
