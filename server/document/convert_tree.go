package document

import (
	"errors"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// treeTicketFromPB reads a ticket a tree message needs, saying which in the refusal.
func treeTicketFromPB(pb *api.TimeTicket, what string) (crdt.Ticket, error) {
	t, err := ticketFromPB(pb)
	if err != nil {
		return t, fmt.Errorf("tree %s: %w", what, err)
	}
	return t, nil
}

func treeNodeIDFromPB(pb *api.TreeNodeID, what string) (crdt.TreeNodeID, error) {
	if pb == nil {
		return crdt.TreeNodeID{}, fmt.Errorf("%w: tree %s: missing node id", ErrInvalidOperation, what)
	}
	t, err := treeTicketFromPB(pb.GetCreatedAt(), what)
	if err != nil {
		return crdt.TreeNodeID{}, err
	}
	return crdt.TreeNodeID{CreatedAt: t, Offset: pb.GetOffset()}, nil
}

func treeNodeIDToPB(id crdt.TreeNodeID) *api.TreeNodeID {
	return &api.TreeNodeID{CreatedAt: ticketToPB(id.CreatedAt), Offset: id.Offset}
}

func treePosFromPB(pb *api.TreePos, what string) (crdt.TreePos, error) {
	if pb == nil {
		return crdt.TreePos{}, fmt.Errorf("%w: tree %s: missing position", ErrInvalidOperation, what)
	}
	parent, err := treeNodeIDFromPB(pb.GetParentId(), what+" parent")
	if err != nil {
		return crdt.TreePos{}, err
	}
	left, err := treeNodeIDFromPB(pb.GetLeftSiblingId(), what+" left sibling")
	if err != nil {
		return crdt.TreePos{}, err
	}
	return crdt.TreePos{ParentID: parent, LeftSiblingID: left}, nil
}

// treeNodeFromPB reads one node of a node list. Attribute values must be JSON: the SDK prints
// a tree by parsing them and would throw on anything else.
func treeNodeFromPB(pb *api.TreeNode) (*crdt.TreeNode, error) {
	if pb == nil {
		return nil, fmt.Errorf("%w: tree node: missing", ErrInvalidOperation)
	}
	id, err := treeNodeIDFromPB(pb.GetId(), "node")
	if err != nil {
		return nil, err
	}
	n := crdt.NewTreeNode(id, pb.GetType(), pb.GetValue())
	if !n.IsText() && len(pb.GetAttributes()) > 0 {
		keys := make([]string, 0, len(pb.GetAttributes()))
		for k := range pb.GetAttributes() {
			keys = append(keys, k)
		}
		crdt.OrderTreeAttrKeys(keys)
		for _, k := range keys {
			a := pb.GetAttributes()[k]
			if a == nil {
				return nil, fmt.Errorf("%w: tree node attribute %q: missing", ErrInvalidOperation, k)
			}
			at, err := treeTicketFromPB(a.GetUpdatedAt(), "node attribute")
			if err != nil {
				return nil, err
			}
			if !a.GetIsRemoved() && !crdt.ValidTreeAttrValue(a.GetValue()) {
				return nil, fmt.Errorf("%w: tree node attribute %q: value is not JSON", ErrInvalidOperation, k)
			}
			n.InitAttr(k, a.GetValue(), at, a.GetIsRemoved())
		}
	}
	if pb.GetInsPrevId() != nil {
		v, err := treeNodeIDFromPB(pb.GetInsPrevId(), "node ins_prev_id")
		if err != nil {
			return nil, err
		}
		n.SetInsPrev(v)
	}
	if pb.GetInsNextId() != nil {
		v, err := treeNodeIDFromPB(pb.GetInsNextId(), "node ins_next_id")
		if err != nil {
			return nil, err
		}
		n.SetInsNext(v)
	}
	if pb.GetMergedFrom() != nil {
		v, err := treeNodeIDFromPB(pb.GetMergedFrom(), "node merged_from")
		if err != nil {
			return nil, err
		}
		n.SetMergedFrom(v)
	}
	if pb.GetMergedAt() != nil {
		v, err := treeTicketFromPB(pb.GetMergedAt(), "node merged_at")
		if err != nil {
			return nil, err
		}
		n.SetMergedAt(v)
	}
	if pb.GetRemovedAt() != nil {
		v, err := treeTicketFromPB(pb.GetRemovedAt(), "node removed_at")
		if err != nil {
			return nil, err
		}
		n.SetRemovedAt(v)
	}
	return n, nil
}

// treeRootFromPB builds the node tree of a postorder node list with depths.
func treeRootFromPB(pbs []*api.TreeNode) (*crdt.TreeNode, error) {
	if len(pbs) == 0 {
		return nil, fmt.Errorf("%w: tree without nodes", ErrInvalidOperation)
	}
	nodes := make([]*crdt.TreeNode, len(pbs))
	depths := make([]int32, len(pbs))
	for i, pb := range pbs {
		n, err := treeNodeFromPB(pb)
		if err != nil {
			return nil, err
		}
		nodes[i], depths[i] = n, pb.GetDepth()
	}
	root, err := crdt.BuildTreeRoot(nodes, depths)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOperation, err)
	}
	return root, nil
}

// treeFromPB reads a snapshot's tree. Like the SDK it keeps the creation ticket only: the
// SDK's reader drops a tree's moved and removed tickets.
func treeFromPB(pb *api.JSONElement_Tree) (*crdt.Tree, error) {
	if pb == nil {
		return nil, fmt.Errorf("%w: missing tree", ErrInvalidOperation)
	}
	root, err := treeRootFromPB(pb.GetNodes())
	if err != nil {
		return nil, err
	}
	createdAt, err := treeTicketFromPB(pb.GetCreatedAt(), "created_at")
	if err != nil {
		return nil, err
	}
	return crdt.NewTree(root, createdAt), nil
}

// treeToPB writes a tree as the SDK does: every node, tombstones included, in postorder with
// its depth.
func treeToPB(t *crdt.Tree) *api.JSONElement_Tree {
	pb := &api.JSONElement_Tree{
		Nodes:     make([]*api.TreeNode, 0, t.NodeCount()),
		CreatedAt: ticketToPB(t.CreatedAt()),
	}
	if !t.MovedAt().IsZero() {
		pb.MovedAt = ticketToPB(t.MovedAt())
	}
	if !t.RemovedAt().IsZero() {
		pb.RemovedAt = ticketToPB(t.RemovedAt())
	}
	t.Root().Walk(func(n *crdt.TreeNode, depth int) {
		pb.Nodes = append(pb.Nodes, treeNodeToPB(n, depth))
	})
	return pb
}

func treeNodeToPB(n *crdt.TreeNode, depth int) *api.TreeNode {
	pb := &api.TreeNode{Id: treeNodeIDToPB(n.ID()), Type: n.Type(), Depth: int32(depth)}
	if n.IsRemoved() {
		pb.RemovedAt = ticketToPB(n.RemovedAt())
	}
	if n.IsText() {
		pb.Value = n.Value()
	}
	if id, ok := n.InsPrev(); ok {
		pb.InsPrevId = treeNodeIDToPB(id)
	}
	if id, ok := n.InsNext(); ok {
		pb.InsNextId = treeNodeIDToPB(id)
	}
	if id, ok := n.MergedFrom(); ok {
		pb.MergedFrom = treeNodeIDToPB(id)
	}
	if at, ok := n.MergedAt(); ok {
		pb.MergedAt = ticketToPB(at)
	}
	if !n.HasAttrs() {
		return pb
	}
	// The SDK writes the table through a JS object: in its order (integer keys first), and
	// without "__proto__", which such an object cannot hold.
	var keys []string
	attrs := make(map[string]*api.NodeAttr)
	n.Attrs(func(key, value string, updatedAt crdt.Ticket, removed bool) {
		if key == "__proto__" {
			return
		}
		keys = append(keys, key)
		attrs[key] = &api.NodeAttr{Value: value, UpdatedAt: ticketToPB(updatedAt), IsRemoved: removed}
	})
	crdt.OrderJSObjectKeys(keys)
	if sort.StringsAreSorted(keys) {
		pb.Attributes = attrs
		return pb
	}
	// Go's encoder writes map entries sorted by key. To write them in the SDK's order, the
	// entries and the fields after them (merged_from, merged_at) go out pre-encoded as the
	// message's trailing unknown fields, which the encoder copies as they are.
	var raw []byte
	var err error
	opts := proto.MarshalOptions{Deterministic: true}
	for _, k := range keys {
		if raw, err = opts.MarshalAppend(raw, &api.TreeNode{Attributes: map[string]*api.NodeAttr{k: attrs[k]}}); err != nil {
			break
		}
	}
	if err == nil {
		raw, err = opts.MarshalAppend(raw, &api.TreeNode{MergedFrom: pb.MergedFrom, MergedAt: pb.MergedAt})
	}
	if err != nil {
		// Strings here came decoded from the wire, so this does not happen; the sorted
		// encoding would still be read right.
		pb.Attributes = attrs
		return pb
	}
	pb.MergedFrom, pb.MergedAt = nil, nil
	pb.ProtoReflect().SetUnknown(raw)
	return pb
}

// treeFromBytes reads the TREE value of a JSONElementSimple: a JSONElement holding the tree.
// The tree's own creation ticket counts, as in the SDK, which ignores the simple's.
func treeFromBytes(value []byte, _ crdt.Ticket) (*crdt.Tree, error) {
	if len(value) == 0 {
		return nil, fmt.Errorf("%w: empty tree value", ErrInvalidOperation)
	}
	var pb api.JSONElement
	if err := proto.Unmarshal(value, &pb); err != nil {
		return nil, fmt.Errorf("%w: tree value: %v", ErrInvalidOperation, err)
	}
	tree := pb.GetTree()
	if tree == nil {
		return nil, fmt.Errorf("%w: tree value holds no tree", ErrInvalidOperation)
	}
	return treeFromPB(tree)
}

// treeContentsFromPB reads an edit's contents: one node list per inserted subtree.
func treeContentsFromPB(pbs []*api.TreeNodes) ([]*crdt.TreeNode, error) {
	if len(pbs) == 0 {
		return nil, nil
	}
	out := make([]*crdt.TreeNode, len(pbs))
	for i, c := range pbs {
		root, err := treeRootFromPB(c.GetContent())
		if err != nil {
			return nil, err
		}
		// Building a tree links merge records inside the content, as the SDK's reader does.
		out[i] = crdt.NewTree(root, crdt.InitialTicket).Root()
	}
	return out, nil
}

// treeExecErr maps the tree's refusals to the document's sentinels.
func treeExecErr(err error) error {
	if errors.Is(err, crdt.ErrTreeNodeNotFound) {
		return fmt.Errorf("%w: %v", ErrElementNotFound, err)
	}
	return fmt.Errorf("%w: %v", ErrInvalidOperation, err)
}

// findTree returns the tree created at t.
func findTree(root *crdt.Root, t crdt.Ticket) (*crdt.Tree, error) {
	elem, ok := root.Find(t)
	if !ok {
		return nil, fmt.Errorf("%w: tree %s", ErrElementNotFound, t)
	}
	tree, ok := elem.(*crdt.Tree)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a tree", ErrWrongElementType, t)
	}
	return tree, nil
}

func registerTreePairs(root *crdt.Root, diff crdt.DataSize, pairs []crdt.GCPair) {
	root.AddLiveSize(diff)
	for _, p := range pairs {
		root.RegisterGCPair(p)
	}
}
