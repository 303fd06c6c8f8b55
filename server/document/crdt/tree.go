package crdt

import (
	"fmt"
	"sort"
)

// Tree is Yorkie's tree type (the SDK's CRDTTree): element and text nodes edited by
// position, with tombstones, split links and merge records to resolve concurrent edits the
// way the SDK 0.7.7 resolves them.
type Tree struct {
	base
	root *TreeNode
	// byID finds nodes by ID and, for IDs of text parts this replica has not split off, the
	// part that holds them (the SDK's floor lookup). Parts of one node share a ticket, so the
	// index is per ticket, with the parts sorted by offset.
	byID  map[Ticket][]*TreeNode
	count int
}

// NewTree returns a tree over root (a built node tree, see BuildTreeRoot) created at
// createdAt, indexing every node and rebuilding the merge caches.
func NewTree(root *TreeNode, createdAt Ticket) *Tree {
	t := &Tree{base: base{createdAt: createdAt}, root: root, byID: make(map[Ticket][]*TreeNode)}
	walkAll(root, 0, func(n *TreeNode, _ int) { t.register(n) })
	t.rebuildMergeState()
	return t
}

// BuildTreeRoot links nodes listed in postorder with their depths (the wire's TreeNode list)
// into a tree and computes its sizes. It returns the root, the last node.
func BuildTreeRoot(nodes []*TreeNode, depths []int32) (*TreeNode, error) {
	if len(nodes) == 0 || len(nodes) != len(depths) {
		return nil, fmt.Errorf("%w: empty node list", ErrTreeRefused)
	}
	last := len(nodes) - 1
	byDepth := map[int32]*TreeNode{depths[last]: nodes[last]}
	for i := last - 1; i >= 0; i-- {
		parent, ok := byDepth[depths[i]-1]
		if !ok {
			return nil, fmt.Errorf("%w: node %d at depth %d has no parent", ErrTreeRefused, i, depths[i])
		}
		if err := parent.prependChild(nodes[i]); err != nil {
			return nil, err
		}
		byDepth[depths[i]] = nodes[i]
	}
	root := nodes[last]
	root.updateDescendantsSize(false)
	root.updateDescendantsSize(true)
	return root, nil
}

// Root is the tree's root node.
func (t *Tree) Root() *TreeNode { return t.root }

// NodeCount is the number of nodes the index holds.
func (t *Tree) NodeCount() int { return t.count }

// Size is the tree's visible size in index units.
func (t *Tree) Size() int { return t.root.visibleSize }

func (t *Tree) register(n *TreeNode) {
	parts := t.byID[n.id.CreatedAt]
	i := sort.Search(len(parts), func(i int) bool { return parts[i].id.Offset >= n.id.Offset })
	if i < len(parts) && parts[i].id.Offset == n.id.Offset {
		parts[i] = n // the SDK's map keeps the last node put under an ID
		return
	}
	parts = append(parts, nil)
	copy(parts[i+1:], parts[i:])
	parts[i] = n
	t.byID[n.id.CreatedAt] = parts
	t.count++
}

func (t *Tree) unregister(id TreeNodeID) {
	parts := t.byID[id.CreatedAt]
	i := sort.Search(len(parts), func(i int) bool { return parts[i].id.Offset >= id.Offset })
	if i >= len(parts) || parts[i].id.Offset != id.Offset {
		return
	}
	if len(parts) == 1 {
		delete(t.byID, id.CreatedAt)
	} else {
		copy(parts[i:], parts[i+1:])
		parts[len(parts)-1] = nil
		t.byID[id.CreatedAt] = parts[:len(parts)-1]
	}
	t.count--
}

// findFloor returns the node of id or, failing that, the part of the same ticket with the
// greatest offset below id's.
func (t *Tree) findFloor(id TreeNodeID) *TreeNode {
	parts := t.byID[id.CreatedAt]
	i := sort.Search(len(parts), func(i int) bool { return parts[i].id.Offset > id.Offset })
	if i == 0 {
		return nil
	}
	return parts[i-1]
}

func (t *Tree) findFloorPtr(id *TreeNodeID) *TreeNode {
	if id == nil {
		return nil
	}
	return t.findFloor(*id)
}

// chainLimit bounds walks along split links, which a crafted snapshot could make circular.
func (t *Tree) chainLimit() int { return t.count + 1 }

func (t *Tree) rebuildMergeState() {
	walkAll(t.root, 0, func(n *TreeNode, _ int) {
		if n.mergedFrom == nil || n.parent == nil {
			return
		}
		src := t.findFloor(*n.mergedFrom)
		if src == nil {
			return
		}
		if n.mergedAt == nil && src.removed {
			at := src.removedAt
			n.mergedAt = &at
		}
		if src.mergedInto == nil {
			src.mergedInto = idPtr(n.parent.id)
		}
	})
}

// ticketKnown reports whether the editor had seen t: always for a change without a vector.
func ticketKnown(vv VersionVector, t Ticket) bool {
	if vv == nil {
		return true
	}
	l, ok := vv[t.Actor]
	return ok && l >= t.Lamport
}

func (n *TreeNode) canDelete(editedAt Ticket, creationKnown, tombstoneKnown bool) bool {
	if !creationKnown {
		return false
	}
	if !n.removed {
		return true
	}
	return !tombstoneKnown && editedAt.After(n.removedAt)
}

func (n *TreeNode) canStyle(editedAt Ticket, clientLamport int64) bool {
	if n.IsText() {
		return false
	}
	existed := n.id.CreatedAt.Lamport <= clientLamport
	return existed && (!n.removed || editedAt.After(n.removedAt))
}

// remove tombstones the node; a later removal of a tombstone only moves its ticket forward.
func (n *TreeNode) remove(at Ticket) bool {
	if !n.removed {
		n.removed, n.removedAt = true, at
		n.updateAncestorsSize(-n.paddedSize(false), false)
		return true
	}
	if at.After(n.removedAt) {
		n.removedAt = at
	}
	return false
}

func (n *TreeNode) cloneText(offset int32) *TreeNode {
	c := &TreeNode{
		id:         TreeNodeID{CreatedAt: n.id.CreatedAt, Offset: offset},
		typ:        n.typ,
		isText:     n.isText,
		removed:    n.removed,
		removedAt:  n.removedAt,
		mergedFrom: n.mergedFrom,
		mergedAt:   n.mergedAt,
	}
	return c
}

func (n *TreeNode) cloneElement(id Ticket) *TreeNode {
	return &TreeNode{
		id:        TreeNodeID{CreatedAt: id},
		typ:       n.typ,
		isText:    n.isText,
		removed:   n.removed,
		removedAt: n.removedAt,
		attrs:     n.attrs.deepCopy(),
	}
}

// deepCopy copies the subtree with its sizes and links.
func (n *TreeNode) deepCopy() *TreeNode {
	c := &TreeNode{
		id: n.id, typ: n.typ, isText: n.isText, text: n.text,
		removed: n.removed, removedAt: n.removedAt,
		attrs:   n.attrs.deepCopy(),
		insPrev: n.insPrev, insNext: n.insNext,
		mergedFrom: n.mergedFrom, mergedAt: n.mergedAt, mergedInto: n.mergedInto,
		visibleSize: n.visibleSize, totalSize: n.totalSize,
	}
	if len(n.children) > 0 {
		c.children = make([]*TreeNode, len(n.children))
		for i, ch := range n.children {
			cc := ch.deepCopy()
			cc.parent = c
			c.children[i] = cc
		}
	}
	return c
}

// DeepCopy returns a detached copy of the subtree.
func (n *TreeNode) DeepCopy() *TreeNode { return n.deepCopy() }

// splitText cuts a text node at offset, putting the right part after it.
func (n *TreeNode) splitText(offset int, absOffset int32) (*TreeNode, DataSize, error) {
	var diff DataSize
	if offset == 0 || offset == n.visibleSize || offset < 0 || offset >= len(n.text) {
		return nil, diff, nil
	}
	prv := n.DataSize()
	left := n.text[:offset:offset]
	right := append([]uint16(nil), n.text[offset:]...)
	n.setText(left)
	r := n.cloneText(int32(offset) + absOffset)
	r.setText(right)
	if n.parent == nil {
		return nil, diff, fmt.Errorf("%w: cannot split a text root", ErrTreeRefused)
	}
	if err := n.parent.insertAfterInternal(r, n); err != nil {
		return nil, diff, err
	}
	diff.Add(n.DataSize())
	diff.Add(r.DataSize())
	diff.Sub(prv)
	return r, diff, nil
}

// splitElement moves the children from offset on into a clone placed after the node, with
// the SDK 0.7.7's rules for children a concurrent merge moved in and for concurrent inserts
// at the boundary.
func (n *TreeNode) splitElement(offset int, issue func() Ticket, vv VersionVector) (*TreeNode, DataSize, error) {
	var diff DataSize
	prv := n.DataSize()
	if n.parent == nil {
		return nil, diff, fmt.Errorf("%w: cannot split the root", ErrTreeRefused)
	}
	clone := n.cloneElement(issue())
	if err := n.parent.insertAfterInternal(clone, n); err != nil {
		return nil, diff, err
	}
	clone.addToAncestors()

	if offset < 0 {
		offset = 0
	}
	if offset > len(n.children) {
		offset = len(n.children)
	}
	left := append([]*TreeNode(nil), n.children[:offset]...)
	right := n.children[offset:]

	actualRight := make([]*TreeNode, 0, len(right))
	for _, c := range right {
		if c.mergedFrom != nil && c.mergedAt != nil && vv != nil && !vv.AfterOrEqual(*c.mergedAt) {
			// A child merged in concurrently from one of this node's own children stays left.
			sourceIsChild := false
			for _, s := range n.children {
				if s.id == *c.mergedFrom {
					sourceIsChild = true
					break
				}
			}
			if sourceIsChild {
				left = append(left, c)
				continue
			}
		}
		actualRight = append(actualRight, c)
	}

	if vv != nil {
		// Inserts at the boundary the editor had not seen stay on the left.
		var moved, remaining []*TreeNode
		reached := false
		for _, c := range actualRight {
			if !reached {
				if c.insPrev != nil && !c.IsText() {
					remaining = append(remaining, c)
					continue
				}
				l, ok := vv[c.id.CreatedAt.Actor]
				if !ok || l < c.id.CreatedAt.Lamport {
					moved = append(moved, c)
					continue
				}
			}
			reached = true
			remaining = append(remaining, c)
		}
		if len(moved) > 0 {
			left = append(left, moved...)
			actualRight = remaining
		}
	}

	n.children = left
	clone.children = actualRight
	n.visibleSize, n.totalSize = childSizes(n.children)
	clone.visibleSize, clone.totalSize = childSizes(clone.children)
	for _, c := range clone.children {
		c.parent = clone
	}
	diff.Add(n.DataSize())
	diff.Add(clone.DataSize())
	diff.Sub(prv)
	return clone, diff, nil
}

func childSizes(children []*TreeNode) (visible, total int) {
	for _, c := range children {
		if !c.removed {
			visible += c.paddedSize(false)
		}
		total += c.paddedSize(true)
	}
	return visible, total
}

// split splits the node at offset and links the parts.
func (n *TreeNode) split(t *Tree, offset int, issue func() Ticket, vv VersionVector) (*TreeNode, DataSize, error) {
	var (
		s    *TreeNode
		diff DataSize
		err  error
	)
	if n.IsText() {
		s, diff, err = n.splitText(offset, n.id.Offset)
	} else {
		s, diff, err = n.splitElement(offset, issue, vv)
	}
	if err != nil || s == nil {
		return s, diff, err
	}
	s.insPrev = idPtr(n.id)
	if n.insNext != nil {
		insNext := t.findFloor(*n.insNext)
		s.insNext = n.insNext
		if insNext != nil {
			insNext.insPrev = idPtr(s.id)
			// An empty new part joins the old right part when an earlier split of the parent
			// put that one under another parent.
			if !n.IsText() && insNext.parent != nil && !insNext.removed &&
				insNext.parent != s.parent && len(s.children) == 0 {
				if err := s.parent.detachChild(s); err != nil {
					return s, diff, err
				}
				if err := insNext.parent.insertBefore(s, insNext); err != nil {
					return s, diff, err
				}
			}
		}
	}
	n.insNext = idPtr(s.id)
	t.register(s)
	return s, diff, nil
}

// advancePastUnknownSplitSiblings follows split links past element parts the editor had not
// seen, so that its position lands after them.
func (t *Tree) advancePastUnknownSplitSiblings(n *TreeNode, vv VersionVector, relaxParent bool, skipActor *ActorID) *TreeNode {
	if vv == nil || n == nil {
		return n
	}
	cur := n
	for steps := t.chainLimit(); cur.insNext != nil && steps > 0; steps-- {
		next := t.findFloor(*cur.insNext)
		if next == nil || next.IsText() {
			break
		}
		if !relaxParent && next.parent != cur.parent {
			break
		}
		actor := next.id.CreatedAt.Actor
		if skipActor != nil && actor == *skipActor {
			break
		}
		if l, ok := vv[actor]; ok && l >= next.id.CreatedAt.Lamport {
			break
		}
		cur = next
	}
	return cur
}

func (t *Tree) hasUnknownSplitSibling(n *TreeNode, vv VersionVector) bool {
	if n.insNext == nil {
		return false
	}
	next := t.findFloor(*n.insNext)
	if next == nil || next.IsText() {
		return false
	}
	l, ok := vv[next.id.CreatedAt.Actor]
	return !ok || l < next.id.CreatedAt.Lamport
}

// toNodePair resolves a position to its parent node and left node.
func (t *Tree) toNodePair(pos TreePos) (parent, left *TreeNode, err error) {
	parent = t.findFloor(pos.ParentID)
	left = t.findFloor(pos.LeftSiblingID)
	if parent == nil || left == nil {
		return nil, nil, fmt.Errorf("%w: position (%s, %s)", ErrTreeNodeNotFound,
			pos.ParentID.Key(), pos.LeftSiblingID.Key())
	}
	// A position right after a split point names the right part: its left is the left part.
	if pos.LeftSiblingID != pos.ParentID && pos.LeftSiblingID.Offset > 0 &&
		pos.LeftSiblingID.Offset == left.id.Offset && left.insPrev != nil {
		left = t.findFloor(*left.insPrev)
		if left == nil {
			return nil, nil, fmt.Errorf("%w: split part of %s", ErrTreeNodeNotFound, pos.LeftSiblingID.Key())
		}
	}
	return parent, left, nil
}

// findNodesAndSplitText resolves a position for an edit at editedAt: it splits the text node
// the position falls in and skips, like RGA, the nodes inserted there concurrently by later
// edits.
func (t *Tree) findNodesAndSplitText(pos TreePos, editedAt Ticket) (parent, left *TreeNode, diff DataSize, err error) {
	parent, left, err = t.toNodePair(pos)
	if err != nil {
		return nil, nil, diff, err
	}
	isLeftMost := parent == left
	realParent := parent
	if left.parent != nil && !isLeftMost {
		realParent = left.parent
	}

	// The parent was merged away: insert where its children went.
	if realParent.removed && isLeftMost && realParent.mergedInto != nil {
		target := t.findFloor(*realParent.mergedInto)
		if target != nil && !target.removed {
			for i, c := range target.children {
				if c.mergedFrom == nil || *c.mergedFrom != realParent.id {
					continue
				}
				if i == 0 {
					return target, target, diff, nil
				}
				return target, target.children[i-1], diff, nil
			}
			return target, target, diff, nil
		}
	}

	if left.IsText() {
		_, diff, err = left.split(t, int(pos.LeftSiblingID.Offset)-int(left.id.Offset), nil, nil)
		if err != nil {
			return nil, nil, diff, err
		}
	}

	index := 0
	if !isLeftMost {
		index = realParent.indexOfChild(left) + 1
	}
	for i := index; i < len(realParent.children); i++ {
		next := realParent.children[i]
		if !next.id.CreatedAt.After(editedAt) {
			break
		}
		left = next
	}
	return realParent, left, diff, nil
}

// toIndexPos converts a parent and left node to a physical position.
func toIndexPos(parent, left *TreeNode, includeRemoved bool) (indexPos, error) {
	if !includeRemoved && parent.removed {
		// The position of a removed parent is that of its closest live ancestor.
		var child *TreeNode
		for parent.removed {
			child = parent
			parent = child.parent
			if parent == nil {
				return indexPos{}, fmt.Errorf("%w: removed root", ErrTreeRefused)
			}
		}
		return indexPos{node: parent, offset: parent.findOffset(child, false)}, nil
	}
	if parent == left {
		return indexPos{node: parent}, nil
	}
	offset := parent.findOffset(left, includeRemoved)
	if includeRemoved || !left.removed {
		if left.IsText() {
			return indexPos{node: left, offset: left.paddedSize(includeRemoved)}, nil
		}
		offset++
	}
	return indexPos{node: parent, offset: offset}, nil
}

func toIndex(parent, left *TreeNode, includeRemoved bool) (int, error) {
	if !parent.IsText() && (includeRemoved || !parent.removed) && parent != left &&
		!(left.IsText() && (includeRemoved || !left.removed)) {
		// After an element (or a tombstone) in parent: one pass over the siblings gives
		// sizeOfLeftSiblings(findOffset(left)+1) of the SDK's path.
		return indexUp(parent, parent.sizeThrough(left, includeRemoved), includeRemoved)
	}
	p, err := toIndexPos(parent, left, includeRemoved)
	if err != nil {
		return 0, err
	}
	return indexOf(p, includeRemoved)
}

func (t *Tree) traverseInPosRange(fromParent, fromLeft, toParent, toLeft *TreeNode, includeRemoved bool,
	fn func(n *TreeNode, typ treeTokenType, ended bool)) error {
	if includeRemoved {
		// Counting tombstones, every node with a parent is among its children, so the SDK's
		// index conversions cannot fail: the same position has no token between, and a range
		// inside one element holds tokens of that element's content only (its ancestors
		// neither start nor end in it), so walking that content gives the same tokens.
		if fromParent == toParent && fromLeft == toLeft {
			return nil
		}
		if p := fromParent; p == toParent && !p.IsText() &&
			(fromLeft == p || fromLeft.parent == p) && (toLeft == p || toLeft.parent == p) {
			from, to := p.offsetAfter(fromLeft), p.offsetAfter(toLeft)
			if from > to {
				return nil
			}
			return tokensBetween(p, from, to, true, fn)
		}
	}
	from, err := toIndex(fromParent, fromLeft, includeRemoved)
	if err != nil {
		return err
	}
	to, err := toIndex(toParent, toLeft, includeRemoved)
	if err != nil {
		return err
	}
	// A concurrent merge can move the end before the start: nothing is left to traverse.
	if from > to {
		return nil
	}
	return tokensBetween(t.root, from, to, includeRemoved, fn)
}

// offsetAfter is the offset, tombstones counted, of the position after child left in n's
// content (0 at n's own start, when left is n).
func (n *TreeNode) offsetAfter(left *TreeNode) int {
	if left == n {
		return 0
	}
	return n.sizeThrough(left, true)
}

// nodeSet is a set of nodes (the SDK's Array.includes checks).
type nodeSet map[*TreeNode]struct{}

func (s nodeSet) has(n *TreeNode) bool { _, ok := s[n]; return ok }

// Edit replaces the range from-to with contents, after splitting the elements around from
// splitLevel levels up, as the SDK's CRDTTree.edit does for a change carrying vv (nil for a
// change without a vector). contents are taken over by the tree. It returns the tombstones to
// register for collection and the change of the live size.
func (t *Tree) Edit(from, to TreePos, contents []*TreeNode, splitLevel int, editedAt Ticket, vv VersionVector) ([]GCPair, DataSize, error) {
	var diff DataSize
	fromParent, fromLeftRaw, d, err := t.findNodesAndSplitText(from, editedAt)
	if err != nil {
		return nil, diff, err
	}
	toParent, toLeftRaw, d2, err := t.findNodesAndSplitText(to, editedAt)
	if err != nil {
		return nil, diff, err
	}
	diff.Add(d2)
	diff.Add(d)

	fromLeft, toLeft := fromLeftRaw, toLeftRaw
	if fromLeftRaw != fromParent {
		fromLeft = t.advancePastUnknownSplitSiblings(fromLeftRaw, vv, false, nil)
	}
	if toLeftRaw != toParent {
		toLeft = t.advancePastUnknownSplitSiblings(toLeftRaw, vv, false, nil)
	}

	// When a concurrent split left the ends under different parents, start the traversal at
	// the part of the start's node that lives under the end's parent.
	collectParent, collectLeft := fromParent, fromLeft
	if fromLeft != fromParent && fromParent != toParent {
		cur := fromLeft
		for steps := t.chainLimit(); cur.insNext != nil && steps > 0; steps-- {
			next := t.findFloor(*cur.insNext)
			if next == nil || next.IsText() {
				break
			}
			if next.parent != nil && next.parent == toParent {
				collectParent, collectLeft = toParent, next
				break
			}
			cur = next
		}
	}

	// The SDK computes the index of the edit's start (for its change events) by climbing
	// from a removed parent to a live ancestor; it throws when the climb runs out, as in a
	// subtree that collection detached.
	for p := fromParent; p.removed; p = p.parent {
		if p.parent == nil {
			return nil, diff, fmt.Errorf("%w: edit inside a detached subtree", ErrTreeRefused)
		}
	}

	var toRemove, toMove, toMerge []*TreeNode
	removeSet, mergeSet := nodeSet{}, nodeSet{}
	addRemove := func(n *TreeNode) {
		toRemove = append(toRemove, n)
		removeSet[n] = struct{}{}
	}
	err = t.traverseInPosRange(collectParent, collectLeft, toParent, toLeft, true,
		func(n *TreeNode, typ treeTokenType, ended bool) {
			// An element whose start only is in the range is merged: its children move to
			// fromParent. Elements the editor had not seen are crossed by accident of a
			// concurrent split, not merged.
			if typ == tokenStart && !ended && ticketKnown(vv, n.id.CreatedAt) {
				toMerge = append(toMerge, n)
				mergeSet[n] = struct{}{}
				for _, c := range n.children {
					if !c.removed {
						toMove = append(toMove, c)
					}
				}
			}
			creationKnown := ticketKnown(vv, n.id.CreatedAt)
			tombstoneKnown := n.removed && ticketKnown(vv, n.removedAt)
			if !n.canDelete(editedAt, creationKnown, tombstoneKnown) &&
				!(removeSet.has(n.parent) && !mergeSet.has(n.parent)) {
				return
			}
			// An element whose end only is in the range stays.
			if typ != tokenText && typ != tokenStart {
				return
			}
			addRemove(n)
			// Parts split off the element concurrently go with it.
			if n.IsText() || n.insNext == nil || mergeSet.has(n) {
				return
			}
			next := t.findFloor(*n.insNext)
			for steps := t.chainLimit(); next != nil && steps > 0; steps-- {
				if !ticketKnown(vv, next.id.CreatedAt) {
					addRemove(next)
					part := next
					walkAll(part, 0, func(x *TreeNode, _ int) {
						if x != part {
							addRemove(x)
						}
					})
				}
				if next.insNext == nil {
					break
				}
				next = t.findFloor(*next.insNext)
			}
		})
	if err != nil {
		return nil, diff, err
	}

	var pairs []GCPair
	for _, n := range toRemove {
		if n.remove(editedAt) {
			pairs = append(pairs, GCPair{Parent: t, Child: n})
		}
	}

	for _, n := range toMove {
		if n.removed {
			continue
		}
		if n.parent != nil {
			n.mergedFrom = idPtr(n.parent.id)
			at := editedAt
			n.mergedAt = &at
			_ = n.parent.detachChild(n) // already detached by a concurrent operation: fine
		}
		if err := fromParent.appendChild(n); err != nil {
			return nil, diff, err
		}
	}
	for _, src := range toMerge {
		src.mergedInto = idPtr(fromParent.id)
	}

	// Deleting a parent a prior merge emptied deletes the children it gave away.
	for _, n := range toRemove {
		if n.mergedInto == nil || mergeSet.has(n) || *n.mergedInto == fromParent.id {
			continue
		}
		target := t.findFloor(*n.mergedInto)
		if target == nil {
			continue
		}
		for _, c := range target.children {
			if c.mergedFrom == nil || *c.mergedFrom != n.id || c.removed {
				continue
			}
			if c.remove(editedAt) {
				pairs = append(pairs, GCPair{Parent: t, Child: c})
			}
			moved := c
			walkAll(moved, 0, func(x *TreeNode, _ int) {
				if x != moved && !x.removed && x.remove(editedAt) {
					pairs = append(pairs, GCPair{Parent: t, Child: x})
				}
			})
		}
	}

	if splitLevel > 0 {
		delimiter := editedAt.Delimiter + uint32(len(contents))
		issue := func() Ticket {
			delimiter++
			return Ticket{Lamport: editedAt.Lamport, Delimiter: delimiter, Actor: editedAt.Actor}
		}
		parent, left := fromParent, fromLeft
		actor := editedAt.Actor
		for i := 0; i < splitLevel; i++ {
			if parent == nil {
				return nil, diff, fmt.Errorf("%w: split level %d passes the root", ErrTreeRefused, splitLevel)
			}
			if left != parent {
				left = t.advancePastUnknownSplitSiblings(left, vv, true, &actor)
				if left.parent != nil && left.parent != parent {
					parent = left.parent
				}
			}
			offset := 0
			if left != parent {
				offset = parent.findOffset(left, true) + 1
			}
			// The SDK leaves the size of split clones out of the live size.
			if _, _, err := parent.split(t, offset, issue, vv); err != nil {
				return nil, diff, err
			}
			left = parent
			parent = parent.parent
		}
	}

	if len(contents) > 0 {
		leftIn := fromLeft
		for _, c := range contents {
			if leftIn == fromParent {
				err = fromParent.insertAt(c, 0)
			} else {
				err = fromParent.insertAfter(c, leftIn)
			}
			if err != nil {
				return nil, diff, err
			}
			leftIn = c
			walkAll(c, 0, func(x *TreeNode, _ int) {
				// Content inserted into a parent removed concurrently is born removed.
				if fromParent.removed {
					x.remove(editedAt)
					pairs = append(pairs, GCPair{Parent: t, Child: x})
				} else {
					diff.Add(x.DataSize())
				}
				t.register(x)
			})
		}
	}
	return pairs, diff, nil
}

// styleRange resolves a style's range like the SDK: text split, and for styles (not removals)
// past element parts split off concurrently.
func (t *Tree) styleRange(from, to TreePos, editedAt Ticket, vv VersionVector, advance bool) (fp, fl, tp, tl *TreeNode, diff DataSize, err error) {
	fp, fl, d, err := t.findNodesAndSplitText(from, editedAt)
	if err != nil {
		return
	}
	tp, tl, d2, err := t.findNodesAndSplitText(to, editedAt)
	if err != nil {
		return
	}
	diff.Add(d2)
	diff.Add(d)
	if advance {
		if fl != fp {
			fl = t.advancePastUnknownSplitSiblings(fl, vv, false, nil)
		}
		if tl != tp {
			tl = t.advancePastUnknownSplitSiblings(tl, vv, false, nil)
		}
	}
	return
}

// TreeAttr is an attribute an operation sets.
type TreeAttr struct {
	Key   string
	Value string
}

func clientLamport(vv VersionVector, actor ActorID) int64 {
	if vv == nil {
		return MaxLamport
	}
	return vv[actor] // missing: 0
}

func (n *TreeNode) setAttrs(attrs []TreeAttr, editedAt Ticket) []*treeAttr {
	if n.attrs == nil {
		n.attrs = &treeAttrs{}
	}
	var prevs []*treeAttr
	for _, a := range attrs {
		if prev, _ := n.attrs.set(a.Key, a.Value, editedAt); prev != nil {
			prevs = append(prevs, prev)
		}
	}
	return prevs
}

// Style sets attrs on the elements in the range, as the SDK's CRDTTree.style.
func (t *Tree) Style(from, to TreePos, attrs []TreeAttr, editedAt Ticket, vv VersionVector) ([]GCPair, DataSize, error) {
	fp, fl, tp, tl, diff, err := t.styleRange(from, to, editedAt, vv, true)
	if err != nil {
		return nil, diff, err
	}
	var pairs []GCPair
	styleOne := func(n *TreeNode, counted bool) {
		for _, prev := range n.setAttrs(attrs, editedAt) {
			pairs = append(pairs, GCPair{Parent: n, Child: prev})
		}
		if !counted {
			return
		}
		for _, a := range attrs {
			if cur := n.attrs.get(a.Key); cur != nil {
				diff.Add(cur.DataSize())
			}
		}
	}
	err = t.traverseInPosRange(fp, fl, tp, tl, false, func(n *TreeNode, typ treeTokenType, _ bool) {
		if !n.canStyle(editedAt, clientLamport(vv, n.id.CreatedAt.Actor)) {
			return
		}
		// An end in the range only because a concurrent split extended it is no target.
		if typ == tokenEnd && vv != nil && t.hasUnknownSplitSibling(n, vv) {
			return
		}
		styleOne(n, typ != tokenEnd)
		if typ != tokenStart || vv == nil {
			return
		}
		// Parts split off concurrently get the style too.
		cur := n
		for steps := t.chainLimit(); cur.insNext != nil && steps > 0; steps-- {
			next := t.findFloor(*cur.insNext)
			if next == nil || next.IsText() || ticketKnown(vv, next.id.CreatedAt) {
				break
			}
			styleOne(next, true)
			cur = next
		}
	})
	if err != nil {
		return nil, diff, err
	}
	return pairs, diff, nil
}

// RemoveStyle removes the attributes keys from the elements in the range, as the SDK's
// CRDTTree.removeStyle.
func (t *Tree) RemoveStyle(from, to TreePos, keys []string, editedAt Ticket, vv VersionVector) ([]GCPair, DataSize, error) {
	fp, fl, tp, tl, diff, err := t.styleRange(from, to, editedAt, vv, false)
	if err != nil {
		return nil, diff, err
	}
	var pairs []GCPair
	removeOne := func(n *TreeNode) {
		if n.attrs == nil {
			n.attrs = &treeAttrs{}
		}
		for _, k := range keys {
			for _, a := range n.attrs.remove(k, editedAt) {
				pairs = append(pairs, GCPair{Parent: n, Child: a})
			}
		}
	}
	err = t.traverseInPosRange(fp, fl, tp, tl, false, func(n *TreeNode, typ treeTokenType, _ bool) {
		if !n.canStyle(editedAt, clientLamport(vv, n.id.CreatedAt.Actor)) {
			return
		}
		if typ == tokenEnd && vv != nil && t.hasUnknownSplitSibling(n, vv) {
			return
		}
		removeOne(n)
		if typ != tokenStart || vv == nil {
			return
		}
		cur := n
		for steps := t.chainLimit(); cur.insNext != nil && steps > 0; steps-- {
			next := t.findFloor(*cur.insNext)
			if next == nil || next.IsText() || ticketKnown(vv, next.id.CreatedAt) {
				break
			}
			removeOne(next)
			cur = next
		}
	})
	if err != nil {
		return nil, diff, err
	}
	return pairs, diff, nil
}

// PurgeNode implements GCParent: it drops a collected node for good and mends the split
// links around it.
func (t *Tree) PurgeNode(child GCChild) {
	n, ok := child.(*TreeNode)
	if !ok {
		return
	}
	if n.parent != nil {
		n.parent.removeChild(n)
	}
	t.unregister(n.id)
	if p := t.findFloorPtr(n.insPrev); p != nil {
		p.insNext = n.insNext
	}
	if nx := t.findFloorPtr(n.insNext); nx != nil {
		nx.insPrev = n.insPrev
	}
	n.insPrev, n.insNext = nil, nil
}

// GCPairs lists what a replica loading this tree registers for collection: like the SDK, it
// walks the live nodes only, so tombstoned nodes read from a snapshot are not collected, but
// removed attributes of live elements are.
func (t *Tree) GCPairs() []GCPair {
	var pairs []GCPair
	walkLive(t.root, func(n *TreeNode) {
		if n.removed {
			pairs = append(pairs, GCPair{Parent: t, Child: n})
		}
		if n.attrs != nil {
			for _, a := range n.attrs.nodes {
				if a.removed {
					pairs = append(pairs, GCPair{Parent: n, Child: a})
				}
			}
		}
	})
	return pairs
}

// DataSize implements Element: the live nodes and the element's tickets.
func (t *Tree) DataSize() DataSize {
	var s DataSize
	walkLive(t.root, func(n *TreeNode) {
		if !n.removed {
			s.Add(n.DataSize())
		}
	})
	s.Meta += t.metaSize()
	return s
}

// DeepCopy implements Element.
func (t *Tree) DeepCopy() Element {
	c := NewTree(t.root.deepCopy(), t.createdAt)
	c.movedAt, c.removedAt = t.movedAt, t.removedAt
	return c
}
