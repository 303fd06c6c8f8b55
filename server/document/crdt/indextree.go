package crdt

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
)

// The index tree: the node structure under a Tree and the integer index the SDK gives every
// position in it. An element counts its open and close tags (2) plus its children; a text node
// counts its UTF-16 code units. Every node keeps two sizes: visible (live nodes only) and total
// (tombstones included); both are updated incrementally exactly where the SDK updates them,
// because a replica that recomputed them would disagree with the SDK in the cases where the
// SDK's incremental sums drift (a removed clone of a split element, for one).

// TreeTextType is the node type of text nodes; every other type is an element.
const TreeTextType = "text"

// treeElementPadding is what an element adds to its parent's size: its open and close tags.
const treeElementPadding = 2

// ErrTreeRefused reports a tree edit that the SDK would refuse by throwing: a position naming no
// node, a child put under a text node, a split past the root.
var ErrTreeRefused = errors.New("tree edit refused")

// ErrTreeNodeNotFound reports a tree position naming a node the tree does not hold.
var ErrTreeNodeNotFound = errors.New("tree node not found")

// TreeNodeID identifies a tree node: the ticket of the edit that created it and, for the right
// parts of split text nodes, the offset of the part in the original text.
type TreeNodeID struct {
	CreatedAt Ticket
	Offset    int32
}

// Compare orders IDs by ticket, then offset.
func (id TreeNodeID) Compare(o TreeNodeID) int {
	if c := id.CreatedAt.Compare(o.CreatedAt); c != 0 {
		return c
	}
	switch {
	case id.Offset > o.Offset:
		return 1
	case id.Offset < o.Offset:
		return -1
	}
	return 0
}

// Key is the SDK's toIDString: "lamport:actor:delimiter:offset".
func (id TreeNodeID) Key() string {
	return id.CreatedAt.Key() + ":" + strconv.FormatInt(int64(id.Offset), 10)
}

// TreePos is a position in a tree as operations carry it: the parent node and the node to the
// left of the position (the parent itself at its leftmost position).
type TreePos struct {
	ParentID      TreeNodeID
	LeftSiblingID TreeNodeID
}

// TreeNode is an element or text node of a Tree.
type TreeNode struct {
	id     TreeNodeID
	typ    string
	isText bool     // typ == TreeTextType, kept because the index walks test it at every node
	text   []uint16 // the value of a text node, in UTF-16 as the SDK holds it

	removed   bool
	removedAt Ticket
	attrs     *treeAttrs

	// insPrev and insNext link the parts of a split node.
	insPrev *TreeNodeID
	insNext *TreeNodeID
	// mergedFrom and mergedAt record, on a child moved by a merge, the parent it came from and
	// the merge's ticket; mergedInto, on the merged-away parent, is a cache rebuilt from them.
	mergedFrom  *TreeNodeID
	mergedAt    *Ticket
	mergedInto  *TreeNodeID
	parent      *TreeNode
	children    []*TreeNode // tombstones included, in order
	visibleSize int
	totalSize   int
}

// NewTreeNode returns a detached node. value is used by text nodes only.
func NewTreeNode(id TreeNodeID, typ string, value string) *TreeNode {
	n := &TreeNode{id: id, typ: typ, isText: typ == TreeTextType}
	if n.isText {
		n.setText(utf16.Encode([]rune(value)))
	}
	return n
}

// ID is the node's identifier.
func (n *TreeNode) ID() TreeNodeID { return n.id }

// Type is the node's type ("text" for text nodes).
func (n *TreeNode) Type() string { return n.typ }

// IsText reports whether the node is a text node.
func (n *TreeNode) IsText() bool { return n.isText }

// Value is a text node's value; halves of surrogate pairs split apart become U+FFFD, as the
// SDK's UTF-8 encoder writes them.
func (n *TreeNode) Value() string { return string(utf16.Decode(n.text)) }

// IsRemoved reports whether the node is a tombstone.
func (n *TreeNode) IsRemoved() bool { return n.removed }

// RemovedAt is the ticket of the node's removal (zero while live).
func (n *TreeNode) RemovedAt() Ticket { return n.removedAt }

// SetRemovedAt marks the node removed at t, as a decoded node says.
func (n *TreeNode) SetRemovedAt(t Ticket) { n.removed, n.removedAt = true, t }

// InsPrev is the ID of the node this one was split from, if any.
func (n *TreeNode) InsPrev() (TreeNodeID, bool) { return optID(n.insPrev) }

// InsNext is the ID of the node split off this one, if any.
func (n *TreeNode) InsNext() (TreeNodeID, bool) { return optID(n.insNext) }

// MergedFrom is the parent this node was moved from by a merge, if any.
func (n *TreeNode) MergedFrom() (TreeNodeID, bool) { return optID(n.mergedFrom) }

// MergedAt is the ticket of the merge that moved this node, if any.
func (n *TreeNode) MergedAt() (Ticket, bool) {
	if n.mergedAt == nil {
		return Ticket{}, false
	}
	return *n.mergedAt, true
}

// SetInsPrev sets the split link to the left part.
func (n *TreeNode) SetInsPrev(id TreeNodeID) { n.insPrev = &id }

// SetInsNext sets the split link to the right part.
func (n *TreeNode) SetInsNext(id TreeNodeID) { n.insNext = &id }

// SetMergedFrom records the parent a merge moved the node from.
func (n *TreeNode) SetMergedFrom(id TreeNodeID) { n.mergedFrom = &id }

// SetMergedAt records the ticket of the merge that moved the node.
func (n *TreeNode) SetMergedAt(t Ticket) { n.mergedAt = &t }

// HasAttrs reports whether the node carries an attribute table (possibly empty).
func (n *TreeNode) HasAttrs() bool { return n.attrs != nil }

// InitAttr sets an attribute as a decoded node holds it.
func (n *TreeNode) InitAttr(key, value string, updatedAt Ticket, removed bool) {
	if n.attrs == nil {
		n.attrs = &treeAttrs{}
	}
	n.attrs.setInternal(key, value, updatedAt, removed)
}

// Attrs calls fn for each attribute in the table's order, removed ones included.
func (n *TreeNode) Attrs(fn func(key, value string, updatedAt Ticket, removed bool)) {
	if n.attrs == nil {
		return
	}
	for _, a := range n.attrs.nodes {
		fn(a.key, a.value, a.updatedAt, a.removed)
	}
}

// Walk visits the node and all its descendants, tombstones included, in postorder with their
// depth below n.
func (n *TreeNode) Walk(fn func(node *TreeNode, depth int)) { walkAll(n, 0, fn) }

// GCKey implements GCChild.
func (n *TreeNode) GCKey() string { return n.id.Key() }

// DataSize is the node's size as the SDK counts it: text as UTF-16 code units times two, a
// ticket for the ID and one for the removal, and the live attributes.
func (n *TreeNode) DataSize() DataSize {
	var s DataSize
	if n.IsText() {
		s.Data += n.visibleSize * 2
	}
	s.Meta += TicketSize
	if n.removed {
		s.Meta += TicketSize
	}
	if n.attrs != nil {
		for _, a := range n.attrs.nodes {
			if a.removed {
				continue
			}
			s.Add(a.DataSize())
		}
	}
	return s
}

// PurgeNode implements GCParent: it drops a removed attribute for good.
func (n *TreeNode) PurgeNode(child GCChild) {
	if a, ok := child.(*treeAttr); ok && n.attrs != nil {
		n.attrs.purge(a)
	}
}

func optID(p *TreeNodeID) (TreeNodeID, bool) {
	if p == nil {
		return TreeNodeID{}, false
	}
	return *p, true
}

func idPtr(id TreeNodeID) *TreeNodeID { return &id }

func (n *TreeNode) setText(v []uint16) {
	n.text = v
	n.visibleSize = len(v)
	n.totalSize = len(v)
}

func (n *TreeNode) paddedSize(includeRemoved bool) int {
	size := n.visibleSize
	if includeRemoved {
		size = n.totalSize
	}
	if !n.IsText() {
		size += treeElementPadding
	}
	return size
}

// updateAncestorsSize adds delta to the sizes of the ancestors. The visible size stops at the
// first removed ancestor (after updating it): above a tombstone nothing of it is visible.
func (n *TreeNode) updateAncestorsSize(delta int, includeRemoved bool) {
	for p := n.parent; p != nil; p = p.parent {
		if includeRemoved {
			p.totalSize += delta
			continue
		}
		p.visibleSize += delta
		if p.removed {
			break
		}
	}
}

// updateDescendantsSize computes the sizes of a freshly built subtree.
func (n *TreeNode) updateDescendantsSize(includeRemoved bool) int {
	size := 0
	for _, c := range n.children {
		cs := c.updateDescendantsSize(includeRemoved)
		if !includeRemoved && c.removed {
			continue
		}
		size += cs
	}
	if includeRemoved {
		n.totalSize += size
	} else {
		n.visibleSize += size
	}
	return n.paddedSize(includeRemoved)
}

func (n *TreeNode) indexOfChild(c *TreeNode) int {
	for i, x := range n.children {
		if x == c {
			return i
		}
	}
	return -1
}

func (n *TreeNode) refuseChildren() error {
	if n.IsText() {
		return fmt.Errorf("%w: a text node cannot have children", ErrTreeRefused)
	}
	return nil
}

// insertAtInternal puts c at offset among the children (clamped like a JS splice) without
// touching sizes.
func (n *TreeNode) insertAtInternal(c *TreeNode, offset int) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	if offset < 0 {
		offset += len(n.children)
		if offset < 0 {
			offset = 0
		}
	}
	if offset > len(n.children) {
		offset = len(n.children)
	}
	n.children = append(n.children, nil)
	copy(n.children[offset+1:], n.children[offset:])
	n.children[offset] = c
	c.parent = n
	return nil
}

func (n *TreeNode) insertAfterInternal(c, ref *TreeNode) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	i := n.indexOfChild(ref)
	if i < 0 {
		return fmt.Errorf("%w: child not found", ErrTreeRefused)
	}
	return n.insertAtInternal(c, i+1)
}

func (c *TreeNode) addToAncestors() {
	c.updateAncestorsSize(c.paddedSize(false), false)
	c.updateAncestorsSize(c.paddedSize(true), true)
}

func (n *TreeNode) appendChild(c *TreeNode) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	n.children = append(n.children, c)
	c.parent = n
	c.addToAncestors()
	return nil
}

// prependChild is for building decoded trees: no sizes are touched.
func (n *TreeNode) prependChild(c *TreeNode) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	n.children = append(n.children, nil)
	copy(n.children[1:], n.children)
	n.children[0] = c
	c.parent = n
	return nil
}

func (n *TreeNode) insertAt(c *TreeNode, offset int) error {
	if err := n.insertAtInternal(c, offset); err != nil {
		return err
	}
	c.addToAncestors()
	return nil
}

func (n *TreeNode) insertBefore(c, ref *TreeNode) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	i := n.indexOfChild(ref)
	if i < 0 {
		return fmt.Errorf("%w: child not found", ErrTreeRefused)
	}
	if err := n.insertAtInternal(c, i); err != nil {
		return err
	}
	c.addToAncestors()
	return nil
}

func (n *TreeNode) insertAfter(c, ref *TreeNode) error {
	if err := n.insertAfterInternal(c, ref); err != nil {
		return err
	}
	c.addToAncestors()
	return nil
}

func (n *TreeNode) removeChildAt(i int) {
	copy(n.children[i:], n.children[i+1:])
	n.children[len(n.children)-1] = nil
	n.children = n.children[:len(n.children)-1]
}

// removeChild drops a purged child for good; a child already moved away is no error.
func (n *TreeNode) removeChild(c *TreeNode) {
	if n.IsText() {
		return
	}
	i := n.indexOfChild(c)
	if i < 0 {
		return
	}
	n.removeChildAt(i)
	c.updateAncestorsSize(-c.paddedSize(true), true)
	c.parent = nil
}

// detachChild takes a live child out to move it elsewhere.
func (n *TreeNode) detachChild(c *TreeNode) error {
	if err := n.refuseChildren(); err != nil {
		return err
	}
	i := n.indexOfChild(c)
	if i < 0 {
		return fmt.Errorf("%w: child not found", ErrTreeRefused)
	}
	n.removeChildAt(i)
	c.updateAncestorsSize(-c.paddedSize(false), false)
	c.updateAncestorsSize(-c.paddedSize(true), true)
	c.parent = nil
	return nil
}

// findOffset is the SDK's findOffset: with includeRemoved the child's index among all
// children; otherwise its index among the live ones (for a tombstone, the number of live
// children before it), -1 when it is no child.
func (n *TreeNode) findOffset(c *TreeNode, includeRemoved bool) int {
	if includeRemoved {
		return n.indexOfChild(c)
	}
	live := 0
	for _, x := range n.children {
		if x == c {
			return live
		}
		if !x.removed {
			live++
		}
	}
	if c.removed {
		// The SDK counts the live children before index -1: none.
		return 0
	}
	return -1
}

// sizeOfLeftSiblings sums the padded sizes of the first offset children (live ones only
// unless includeRemoved, where offset then counts live children only).
func (n *TreeNode) sizeOfLeftSiblings(offset int, includeRemoved bool) int {
	acc := 0
	if includeRemoved {
		for i := 0; i < offset && i < len(n.children); i++ {
			acc += n.children[i].paddedSize(true)
		}
		return acc
	}
	seen := 0
	for _, c := range n.children {
		if seen >= offset {
			break
		}
		if c.removed {
			continue
		}
		acc += c.paddedSize(false)
		seen++
	}
	return acc
}

func walkAll(n *TreeNode, depth int, fn func(*TreeNode, int)) {
	for _, c := range n.children {
		walkAll(c, depth+1, fn)
	}
	fn(n, depth)
}

// walkLive visits the live part of the subtree in postorder: tombstones and everything
// under them are skipped, as the SDK's traverse does.
func walkLive(n *TreeNode, fn func(*TreeNode)) {
	for _, c := range n.children {
		if !c.removed {
			walkLive(c, fn)
		}
	}
	fn(n)
}

// treeTokenType is the kind of a token of the tree's XML form.
type treeTokenType int8

const (
	tokenStart treeTokenType = iota
	tokenEnd
	tokenText
)

// tokensBetween calls fn for every token between the indexes from and to under n, as the
// SDK's tokensBetween does. ended tells that the token's element ends inside the range.
func tokensBetween(n *TreeNode, from, to int, includeRemoved bool,
	fn func(node *TreeNode, typ treeTokenType, ended bool)) error {
	if from > to {
		return fmt.Errorf("%w: from is greater than to: %d > %d", ErrTreeRefused, from, to)
	}
	size := n.visibleSize
	if includeRemoved {
		size = n.totalSize
	}
	if from > size || to > size {
		return fmt.Errorf("%w: range %d-%d is out of %d", ErrTreeRefused, from, to, size)
	}
	if from == to {
		return nil
	}
	pos := 0
	for _, c := range n.children {
		if pos >= to {
			break // sizes are never negative: no later child starts before to
		}
		if !includeRemoved && c.removed {
			continue
		}
		padded := c.paddedSize(includeRemoved)
		if from-padded < pos && pos < to {
			fromChild, toChild := from-pos, to-pos
			if !c.IsText() {
				fromChild--
				toChild--
			}
			childSize := c.visibleSize
			if includeRemoved {
				childSize = c.totalSize
			}
			startContained := !c.IsText() && fromChild < 0
			endContained := !c.IsText() && toChild > childSize
			if c.IsText() {
				fn(c, tokenText, endContained)
			} else if startContained {
				fn(c, tokenStart, endContained)
			}
			if err := tokensBetween(c, max(0, fromChild), min(toChild, childSize), includeRemoved, fn); err != nil {
				return err
			}
			if endContained {
				fn(c, tokenEnd, endContained)
			}
		}
		pos += padded
	}
	return nil
}

// indexPos is a physical position: a node and an offset in it (children of an element, code
// units of a text node).
type indexPos struct {
	node   *TreeNode
	offset int
}

// leftSize is sizeOfLeftSiblings(findOffset(c)) in one pass: the size of the siblings before
// c, false when c is a live node that is no child (findOffset's -1).
func (n *TreeNode) leftSize(c *TreeNode, includeRemoved bool) (int, bool) {
	acc := 0
	for _, x := range n.children {
		if x == c {
			return acc, true
		}
		if includeRemoved {
			acc += x.paddedSize(true)
		} else if !x.removed {
			acc += x.paddedSize(false)
		}
	}
	if includeRemoved || !c.removed {
		return 0, false
	}
	return 0, true
}

// sizeThrough is the size of the siblings up to and with c (without c when it is a tombstone
// and tombstones are not counted), 0 when c is no child: the left size of the position after
// c, as the SDK's findOffset and sizeOfLeftSiblings give it.
func (n *TreeNode) sizeThrough(c *TreeNode, includeRemoved bool) int {
	acc := 0
	for _, x := range n.children {
		counted := includeRemoved || !x.removed
		if counted {
			acc += x.paddedSize(includeRemoved)
		}
		if x == c {
			return acc
		}
	}
	return 0
}

// indexOf converts a physical position to the tree's integer index.
func indexOf(p indexPos, includeRemoved bool) (int, error) {
	node := p.node
	if !node.IsText() {
		return indexUp(node, node.sizeOfLeftSiblings(p.offset, includeRemoved), includeRemoved)
	}
	parent := node.parent
	if parent == nil {
		return 0, fmt.Errorf("%w: text node without parent", ErrTreeRefused)
	}
	left, ok := parent.leftSize(node, includeRemoved)
	if !ok {
		return 0, fmt.Errorf("%w: invalid pos", ErrTreeRefused)
	}
	return indexUp(parent, p.offset+left, includeRemoved)
}

// indexUp adds to size, an offset inside node, what lies before node up to the root.
func indexUp(node *TreeNode, size int, includeRemoved bool) (int, error) {
	depth := 1
	for node.parent != nil {
		parent := node.parent
		left, ok := parent.leftSize(node, includeRemoved)
		if !ok {
			return 0, fmt.Errorf("%w: invalid pos", ErrTreeRefused)
		}
		size += left
		depth++
		node = parent
	}
	return size + depth - 1, nil
}
