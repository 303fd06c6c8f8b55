package crdt

// LiveChildren calls fn for each child of the node that is not removed, in
// order: the children the SDK's tree nodes list.
func (n *TreeNode) LiveChildren(fn func(child *TreeNode)) {
	for _, c := range n.children {
		if !c.removed {
			fn(c)
		}
	}
}
