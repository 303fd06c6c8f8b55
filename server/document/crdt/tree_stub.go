package crdt

// TreeNode is a placeholder for a tree node until the tree type lands.
type TreeNode struct{}

// Tree is a placeholder for the tree type until it lands; it holds nothing.
type Tree struct {
	base
	root *TreeNode
}

// NewTree returns a tree of root created at createdAt.
func NewTree(root *TreeNode, createdAt Ticket) *Tree {
	return &Tree{base: base{createdAt: createdAt}, root: root}
}

// DataSize implements Element.
func (t *Tree) DataSize() DataSize { return DataSize{Meta: t.metaSize()} }

// JSON implements Element.
func (t *Tree) JSON(b []byte) []byte { return append(b, "{}"...) }

// DeepCopy implements Element.
func (t *Tree) DeepCopy() Element { c := *t; return &c }

// GCPairs lists the removed nodes waiting for collection.
func (t *Tree) GCPairs() []GCPair { return nil }
