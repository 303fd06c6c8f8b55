package crdt

import (
	"errors"
	"strings"
	"testing"
)

func actor(b byte) ActorID { var a ActorID; a[ActorIDSize-1] = b; return a }

func tk(lamport int64, a byte, delim uint32) Ticket {
	return Ticket{Lamport: lamport, Actor: actor(a), Delimiter: delim}
}

// treeBuilder issues tickets of one change for the nodes of a test tree.
type treeBuilder struct {
	lamport int64
	actor   byte
	delim   uint32
}

func (b *treeBuilder) next() Ticket { b.delim++; return tk(b.lamport, b.actor, b.delim) }

func (b *treeBuilder) elem(typ string, children ...*TreeNode) *TreeNode {
	n := NewTreeNode(TreeNodeID{CreatedAt: b.next()}, typ, "")
	for _, c := range children {
		if err := n.appendChild(c); err != nil {
			panic(err)
		}
	}
	return n
}

func (b *treeBuilder) text(v string) *TreeNode {
	return NewTreeNode(TreeNodeID{CreatedAt: b.next()}, TreeTextType, v)
}

// newTestTree builds doc>children at lamport 1 of actor 1.
func newTestTree(build func(b *treeBuilder) []*TreeNode) *Tree {
	b := &treeBuilder{lamport: 1, actor: 1}
	root := b.elem("doc", build(b)...)
	return NewTree(root, tk(1, 1, 0))
}

// posAt is the SDK's findPos: the CRDT position of an index, preferring text nodes.
func posAt(t *testing.T, tree *Tree, index int) TreePos {
	t.Helper()
	node, offset := findTreePosForTest(t, tree.root, index)
	var left *TreeNode
	if node.IsText() {
		parent := node.parent
		if firstLive(parent) == node && offset == 0 {
			left = parent
		} else {
			left = node
		}
		node = parent
	} else if offset == 0 {
		left = node
	} else {
		left = liveChild(node, offset-1)
	}
	return TreePos{ParentID: node.id, LeftSiblingID: TreeNodeID{CreatedAt: left.id.CreatedAt, Offset: left.id.Offset + int32(offset)}}
}

func firstLive(n *TreeNode) *TreeNode { return liveChild(n, 0) }

func liveChild(n *TreeNode, i int) *TreeNode {
	for _, c := range n.children {
		if c.removed {
			continue
		}
		if i == 0 {
			return c
		}
		i--
	}
	return nil
}

func findTreePosForTest(t *testing.T, n *TreeNode, index int) (*TreeNode, int) {
	t.Helper()
	if index > n.visibleSize {
		t.Fatalf("index %d out of %d", index, n.visibleSize)
	}
	if n.IsText() {
		return n, index
	}
	offset, pos := 0, 0
	for _, c := range n.children {
		if c.removed {
			continue
		}
		if c.IsText() && c.visibleSize >= index-pos {
			return findTreePosForTest(t, c, index-pos)
		}
		if index == pos {
			return n, offset
		}
		if c.paddedSize(false) > index-pos {
			return findTreePosForTest(t, c, index-pos-1)
		}
		pos += c.paddedSize(false)
		offset++
	}
	return n, offset
}

func wantJSON(t *testing.T, tree *Tree, want string) {
	t.Helper()
	if got := string(tree.JSON(nil)); got != want {
		t.Fatalf("JSON\n got  %s\n want %s", got, want)
	}
}

func edit(t *testing.T, tree *Tree, from, to int, contents []*TreeNode, split int, at Ticket, vv VersionVector) []GCPair {
	t.Helper()
	pairs, _, err := tree.Edit(posAt(t, tree, from), posAt(t, tree, to), contents, split, at, vv)
	if err != nil {
		t.Fatalf("edit %d-%d: %v", from, to, err)
	}
	return pairs
}

func TestTreeInsertAndDeleteText(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode { return []*TreeNode{b.elem("p", b.text("ab"))} })
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"ab"}]}]}`)
	if tree.Size() != 4 {
		t.Fatalf("size %d, want 4", tree.Size())
	}
	// Insert in the middle of "ab": the text node splits.
	edit(t, tree, 2, 2, []*TreeNode{NewTreeNode(TreeNodeID{CreatedAt: tk(2, 1, 1)}, "text", "X")}, 0, tk(2, 1, 1), nil)
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"},{"type":"text","value":"X"},{"type":"text","value":"b"}]}]}`)
	if tree.NodeCount() != 5 {
		t.Fatalf("nodes %d, want 5", tree.NodeCount())
	}
	// Delete "aX": two tombstones.
	pairs := edit(t, tree, 1, 3, nil, 0, tk(3, 1, 1), nil)
	if len(pairs) != 2 {
		t.Fatalf("%d tombstones, want 2", len(pairs))
	}
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"b"}]}]}`)
	if tree.Size() != 3 {
		t.Fatalf("size %d, want 3", tree.Size())
	}
}

func TestTreeDeleteAcrossElementsMerges(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode {
		return []*TreeNode{b.elem("p", b.text("ab")), b.elem("p", b.text("cd"))}
	})
	// <p>a|b</p><p>c|d</p>: deleting from inside the first to inside the second merges them.
	edit(t, tree, 2, 6, nil, 0, tk(2, 1, 1), nil)
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"},{"type":"text","value":"d"}]}]}`)
	moved := tree.root.children[0].children
	last := moved[len(moved)-1]
	if from, ok := last.MergedFrom(); !ok || from != tree.root.children[1].id {
		t.Fatalf("moved child records merged_from %v %v", from, ok)
	}
}

func TestTreeSplitLevels(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode {
		return []*TreeNode{b.elem("div", b.elem("p", b.text("abcd")))}
	})
	// Split at "ab|cd" two levels up: the p and the div split.
	edit(t, tree, 4, 4, nil, 2, tk(2, 1, 1), nil)
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"div","children":[{"type":"p","children":[{"type":"text","value":"ab"}]}]},{"type":"div","children":[{"type":"p","children":[{"type":"text","value":"cd"}]}]}]}`)
	// The clones take the tickets after the edit's own: delimiters 2 and 3.
	if got := tree.root.children[1].id.CreatedAt; got != tk(2, 1, 3) {
		t.Fatalf("div clone %v", got)
	}
	if got := tree.root.children[1].children[0].id.CreatedAt; got != tk(2, 1, 2) {
		t.Fatalf("p clone %v", got)
	}
	// A split past the root is refused.
	_, _, err := tree.Edit(posAt(t, tree, 3), posAt(t, tree, 3), nil, 3, tk(3, 1, 1), nil)
	if !errors.Is(err, ErrTreeRefused) {
		t.Fatalf("split past the root: %v", err)
	}
}

func TestTreeConcurrentInsertsOrderByTicket(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode { return []*TreeNode{b.elem("p")} })
	pos := posAt(t, tree, 1)
	ins := func(at Ticket, v string) {
		n := NewTreeNode(TreeNodeID{CreatedAt: at}, "text", v)
		if _, _, err := tree.Edit(pos, pos, []*TreeNode{n}, 0, at, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Same position, applied in either order: the later ticket comes first.
	ins(tk(3, 2, 1), "B")
	ins(tk(2, 1, 1), "A")
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"B"},{"type":"text","value":"A"}]}]}`)
}

func TestTreeDeleteSkipsNodesTheEditorHadNotSeen(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode { return []*TreeNode{b.elem("p", b.text("ab"))} })
	from, to := posAt(t, tree, 1), posAt(t, tree, 3)
	// Another replica inserts "X" between a and b.
	x := NewTreeNode(TreeNodeID{CreatedAt: tk(2, 2, 1)}, "text", "X")
	edit(t, tree, 2, 2, []*TreeNode{x}, 0, tk(2, 2, 1), VersionVector{actor(1): 1, actor(2): 2})
	// A deletion of "ab" made before seeing it leaves it.
	if _, _, err := tree.Edit(from, to, nil, 0, tk(3, 1, 1), VersionVector{actor(1): 3}); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"X"}]}]}`)
}

func TestTreeStyleAndRemoveStyle(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode {
		return []*TreeNode{b.elem("p", b.text("a")), b.elem("p", b.text("b"))}
	})
	pairs, diff, err := tree.Style(posAt(t, tree, 0), posAt(t, tree, 1),
		[]TreeAttr{{"bold", "true"}, {"c", `{"x":[1,2e21,0.0000001,"\u0001"]}`}}, tk(2, 1, 1), nil)
	if err != nil || len(pairs) != 0 {
		t.Fatal(err, pairs)
	}
	// Sizes of the attributes written: (4+4)*2 and (1+len(value))*2, a ticket each.
	value := `{"x":[1,2e21,0.0000001,"\u0001"]}`
	if want := (DataSize{Data: 16 + (1+len(value))*2, Meta: 2 * TicketSize}); diff != want {
		t.Fatalf("diff %+v, want %+v", diff, want)
	}
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"}],"attributes":{"bold":true,"c":{"x":[1,2e+21,1e-7,"\u0001"]}}},{"type":"p","children":[{"type":"text","value":"b"}]}]}`)

	pairs, _, err = tree.RemoveStyle(posAt(t, tree, 0), posAt(t, tree, 4), []string{"bold", "none"}, tk(3, 1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The range holds the first p whole and the start of the second: both lose "bold" and
	// "none", as tombstones where they never had them.
	if len(pairs) != 4 {
		t.Fatalf("%d attribute tombstones, want 4", len(pairs))
	}
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"}],"attributes":{"c":{"x":[1,2e+21,1e-7,"\u0001"]}}},{"type":"p","children":[{"type":"text","value":"b"}],"attributes":{}}]}`)

	// The SDK keys attribute tombstones by ticket and key only: those of one removal on two
	// elements collide and cancel out in the root's table.
	root := NewRoot(&testContainer{tree: tree})
	for _, p := range pairs {
		root.RegisterGCPair(p)
	}
	if n := root.GarbageLen(); n != 0 {
		t.Fatalf("garbage %d, want 0", n)
	}

	// One element's tombstones are collected once every replica saw the removal.
	pairs, _, err = tree.RemoveStyle(posAt(t, tree, 0), posAt(t, tree, 1), []string{"c"}, tk(4, 1, 1), nil)
	if err != nil || len(pairs) != 1 {
		t.Fatal(err, pairs)
	}
	root.RegisterGCPair(pairs[0])
	if n := root.GarbageCollect(VersionVector{actor(1): 4}); n != 1 {
		t.Fatalf("collected %d, want 1", n)
	}
	if got := len(tree.root.children[0].attrs.nodes); got != 2 { // bold and none tombstones
		t.Fatalf("attributes left: %d", got)
	}
}

func TestTreeGarbageCollectPurgesNodes(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode {
		return []*TreeNode{b.elem("p", b.text("abc")), b.elem("p", b.text("d"))}
	})
	obj := &testContainer{tree: tree}
	root := NewRoot(obj)
	// Split "abc" to make linked parts, then delete the middle part and the second p.
	edit(t, tree, 2, 2, nil, 0, tk(2, 1, 1), nil)
	pairs, diff, err := tree.Edit(posAt(t, tree, 2), posAt(t, tree, 8), nil, 0, tk(3, 1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	root.AddLiveSize(diff)
	for _, p := range pairs {
		root.RegisterGCPair(p)
	}
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"}]}]}`)
	if root.GarbageLen() != 3 { // "bc", the p, its "d"
		t.Fatalf("garbage %d, want 3", root.GarbageLen())
	}
	before := tree.NodeCount()
	if n := root.GarbageCollect(VersionVector{actor(1): 2}); n != 0 {
		t.Fatalf("collected %d before every replica saw the removal", n)
	}
	if n := root.GarbageCollect(VersionVector{actor(1): 3}); n != 3 {
		t.Fatalf("collected %d, want 3", n)
	}
	if tree.NodeCount() != before-3 {
		t.Fatalf("nodes %d, want %d", tree.NodeCount(), before-3)
	}
	a := tree.root.children[0].children[0]
	if _, ok := a.InsNext(); ok {
		t.Fatal("the purged part is still linked")
	}
	if tree.root.totalSize != tree.root.visibleSize {
		t.Fatalf("total %d, visible %d after purge", tree.root.totalSize, tree.root.visibleSize)
	}
}

func TestTreeRefusesUnknownPositions(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode { return []*TreeNode{b.elem("p")} })
	bad := TreePos{ParentID: TreeNodeID{CreatedAt: tk(9, 9, 9)}, LeftSiblingID: TreeNodeID{CreatedAt: tk(9, 9, 9)}}
	if _, _, err := tree.Edit(bad, bad, nil, 0, tk(2, 1, 1), nil); !errors.Is(err, ErrTreeNodeNotFound) {
		t.Fatalf("edit at an unknown node: %v", err)
	}
	if _, _, err := tree.Style(bad, bad, nil, tk(2, 1, 1), nil); !errors.Is(err, ErrTreeNodeNotFound) {
		t.Fatalf("style at an unknown node: %v", err)
	}
}

func TestBuildTreeRootRefusesMalformedLists(t *testing.T) {
	b := &treeBuilder{lamport: 1, actor: 1}
	for name, c := range map[string]struct {
		nodes  []*TreeNode
		depths []int32
	}{
		"empty":            {nil, nil},
		"no parent depth":  {[]*TreeNode{b.text("a"), b.elem("doc")}, []int32{2, 0}},
		"child under text": {[]*TreeNode{b.text("a"), b.text("b")}, []int32{1, 0}},
		"same depth":       {[]*TreeNode{b.elem("p"), b.elem("doc")}, []int32{0, 0}},
	} {
		if _, err := BuildTreeRoot(c.nodes, c.depths); !errors.Is(err, ErrTreeRefused) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTreeJSONEscapesAsJSONStringify(t *testing.T) {
	tree := newTestTree(func(b *treeBuilder) []*TreeNode {
		return []*TreeNode{b.elem("p\"", b.text("a\"\\\n\u2028\u0007é😀"))}
	})
	wantJSON(t, tree, `{"type":"doc","children":[{"type":"p\"","children":[{"type":"text","value":"a\"\\`+"\\n\u2028\\u0007é😀"+`"}]}]}`)
	// Splitting a surrogate pair leaves lone halves, written as \u escapes.
	edit(t, tree, 9, 9, nil, 0, tk(2, 1, 1), nil)
	if got := string(tree.JSON(nil)); !strings.Contains(got, `\ud83d"},{"type":"text","value":"\ude00`) {
		t.Fatalf("lone surrogates: %s", got)
	}
}

func TestTreeAttrKeysInJSObjectOrder(t *testing.T) {
	keys := []string{"b", "10", "a", "2", "01", "4294967295"}
	OrderTreeAttrKeys(keys)
	if got := strings.Join(keys, ","); got != "2,10,01,4294967295,a,b" {
		t.Fatalf("order %s", got)
	}
	for _, v := range []string{"1", `"x"`, " [1, {\"a\":null}] ", "-0.5e-3", "true"} {
		if !ValidTreeAttrValue(v) {
			t.Errorf("%q refused", v)
		}
	}
	for _, v := range []string{"", "01", "'x'", "[1,]", `"a`, "nul", "1 2", "\"\x01\"", "{a:1}"} {
		if ValidTreeAttrValue(v) {
			t.Errorf("%q accepted", v)
		}
	}
}

// testContainer holds one tree for root-level tests.
type testContainer struct {
	base
	tree *Tree
}

func (c *testContainer) DataSize() DataSize   { return DataSize{} }
func (c *testContainer) JSON(b []byte) []byte { return c.tree.JSON(b) }
func (c *testContainer) DeepCopy() Element    { return c }
func (c *testContainer) Purge(Element)        {}
func (c *testContainer) Descendants(fn func(Element, Container) bool) bool {
	return fn(c.tree, c)
}
func (c *testContainer) SubPathOf(Ticket) (string, bool) { return "t", true }
