package crdt

import "strconv"

// Array is a JSON array: elements in a replicated list, addressed by their creation tickets.
type Array struct {
	base
	list rgaList
}

// NewArray returns an empty array created at createdAt.
func NewArray(createdAt Ticket) *Array {
	return &Array{base: base{createdAt: createdAt}, list: newRGAList()}
}

// InsertAfter inserts elem after prevCreatedAt (a position, or an element's current
// position), behind the concurrent insertions made later than executedAt.
func (a *Array) InsertAfter(prevCreatedAt Ticket, elem Element, executedAt Ticket) error {
	return a.list.insertAfter(prevCreatedAt, elem, executedAt)
}

// Append adds elem at the end, as decoding a snapshot does (an insertion after the last
// node's identity at the element's own creation ticket).
func (a *Array) Append(elem Element) error {
	return a.list.insertAfter(a.list.last.createdAt(), elem, elem.CreatedAt())
}

// AppendDeadPosition adds a position a move emptied at removedAt (decoding a snapshot).
func (a *Array) AppendDeadPosition(posCreatedAt, removedAt Ticket) {
	a.list.appendDead(posCreatedAt, removedAt)
}

// AppendMoved adds an element that a move at posMovedAt put at the position posCreatedAt
// (decoding a snapshot). An element whose position tickets are both its own creation
// ticket was never moved: a snapshot writes it so only to be appended in place (see the
// encoder), and it is kept as never moved, so that it encodes as it did before.
func (a *Array) AppendMoved(elem Element, posCreatedAt, posMovedAt Ticket) {
	if posCreatedAt == elem.CreatedAt() && posMovedAt == elem.CreatedAt() {
		posMovedAt = Ticket{}
	}
	a.list.appendMoved(elem, posCreatedAt, posMovedAt)
}

// MoveAfter moves the element createdAt after the position prevCreatedAt. It returns the
// position that died, to be registered for collection, or nil.
func (a *Array) MoveAfter(prevCreatedAt, createdAt, executedAt Ticket) (GCChild, error) {
	n, err := a.list.moveAfter(prevCreatedAt, createdAt, executedAt)
	if err != nil || n == nil {
		return nil, err
	}
	return n, nil
}

// RemoveChild marks the element createdAt removed at executedAt and returns it.
func (a *Array) RemoveChild(createdAt, executedAt Ticket) (Element, error) {
	return a.list.remove(createdAt, executedAt)
}

// HasElement reports whether the array holds an element created at createdAt.
func (a *Array) HasElement(createdAt Ticket) bool {
	_, ok := a.list.entries[createdAt]
	return ok
}

// Set replaces the element createdAt with elem (ArraySet): elem goes right after it, and it
// is marked removed at executedAt.
func (a *Array) Set(createdAt Ticket, elem Element, executedAt Ticket) error {
	if _, ok := a.list.entries[createdAt]; !ok {
		return ErrNodeNotFound
	}
	if err := a.list.insertAfter(createdAt, elem, executedAt); err != nil {
		return err
	}
	_, err := a.list.remove(createdAt, executedAt)
	return err
}

// Nodes calls fn for every position after the head in order: elem is nil for a dead
// position; posMovedAt is zero for an element never moved.
func (a *Array) Nodes(fn func(elem Element, posCreatedAt, posMovedAt, posRemovedAt Ticket)) {
	for n := a.list.head.next; n != nil; n = n.next {
		if n.entry == nil {
			fn(nil, n.posCreatedAt, Ticket{}, n.removedAt)
			continue
		}
		fn(n.entry.elem, n.posCreatedAt, n.entry.posMovedAt, Ticket{})
	}
}

// Len is the number of live elements.
func (a *Array) Len() int {
	c := 0
	for n := a.list.head.next; n != nil; n = n.next {
		if !n.isRemoved() {
			c++
		}
	}
	return c
}

// GCPairs lists the dead positions waiting for collection.
func (a *Array) GCPairs() []GCPair {
	var pairs []GCPair
	for n := a.list.head.next; n != nil; n = n.next {
		if n.entry == nil && !n.removedAt.IsZero() {
			pairs = append(pairs, GCPair{Parent: a, Child: n})
		}
	}
	return pairs
}

// PurgeNode implements GCParent: a dead position goes for good.
func (a *Array) PurgeNode(child GCChild) {
	if n, ok := child.(*listNode); ok {
		a.list.release(n)
	}
}

// Purge implements Container.
func (a *Array) Purge(child Element) { a.list.purgeElement(child) }

// Descendants implements Container.
func (a *Array) Descendants(fn func(elem Element, parent Container) bool) bool {
	for n := a.list.head.next; n != nil; n = n.next {
		if n.entry == nil {
			continue
		}
		if fn(n.entry.elem, a) {
			return true
		}
		if c, ok := n.entry.elem.(Container); ok {
			c.Descendants(fn)
		}
	}
	return false
}

// SubPathOf implements Container: the element's index among the live ones.
func (a *Array) SubPathOf(createdAt Ticket) (string, bool) {
	target, ok := a.list.nodes[createdAt]
	if e, found := a.list.entries[createdAt]; found {
		target, ok = e.pos, true
	}
	if !ok {
		return "", false
	}
	i := 0
	for n := a.list.head.next; n != nil && n != target; n = n.next {
		if !n.isRemoved() {
			i++
		}
	}
	return strconv.Itoa(i), true
}

// DataSize implements Element: an array counts only its tickets.
func (a *Array) DataSize() DataSize { return DataSize{Meta: a.metaSize()} }

// JSON implements Element. As in the SDK, objects inside an array print their keys in
// insertion order, not sorted.
func (a *Array) JSON(b []byte) []byte {
	b = append(b, '[')
	first := true
	for n := a.list.head.next; n != nil; n = n.next {
		if n.isRemoved() {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendUnsortedJSON(b, n.entry.elem)
	}
	return append(b, ']')
}

// DeepCopy implements Element.
func (a *Array) DeepCopy() Element {
	c := NewArray(a.createdAt)
	c.movedAt, c.removedAt = a.movedAt, a.removedAt
	for n := a.list.head.next; n != nil; n = n.next {
		switch {
		case n.entry == nil:
			c.list.appendDead(n.posCreatedAt, n.removedAt)
		default:
			elem := n.entry.elem.DeepCopy()
			entry := &arrayEntry{elem: elem, posMovedAt: n.entry.posMovedAt}
			m := &listNode{entry: entry, posCreatedAt: n.posCreatedAt}
			entry.pos = m
			c.list.linkAfter(c.list.last, m)
			c.list.nodes[n.posCreatedAt] = m
			c.list.entries[elem.CreatedAt()] = entry
		}
	}
	return c
}

// appendUnsortedJSON writes elem as the SDK's toJSON (not toSortedJSON) does.
func appendUnsortedJSON(b []byte, elem Element) []byte {
	if o, ok := elem.(*Object); ok {
		return o.unsortedJSON(b)
	}
	return elem.JSON(b)
}
