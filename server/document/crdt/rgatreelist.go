package crdt

import (
	"errors"
	"fmt"
)

// ErrNodeNotFound reports an array position or element the array does not hold.
var ErrNodeNotFound = errors.New("array node not found")

// arrayEntry is an element of an array and the position it currently occupies.
type arrayEntry struct {
	elem Element
	pos  *listNode
	// posMovedAt is the ticket of the move that put the element at pos (zero if never moved).
	posMovedAt Ticket
}

// listNode is a position in an array's list. A position holds an element, or none when a
// move took its element away (a dead position, kept as an anchor until collected).
type listNode struct {
	entry *arrayEntry
	// posCreatedAt is when the position was made: the element's creation for the position
	// it was inserted at, the move's ticket for a position a move made.
	posCreatedAt Ticket
	// removedAt is when the position died (zero while it holds an element).
	removedAt  Ticket
	prev, next *listNode
}

// createdAt is the node's identity for lookups: its element's creation ticket while it
// holds one, its own creation ticket otherwise.
func (n *listNode) createdAt() Ticket {
	if n.entry != nil {
		return n.entry.elem.CreatedAt()
	}
	return n.posCreatedAt
}

// positionedAt orders concurrent insertions at one place: newer positions come first.
func (n *listNode) positionedAt() Ticket {
	if n.entry != nil {
		if !n.entry.posMovedAt.IsZero() {
			return n.entry.posMovedAt
		}
		return n.entry.elem.CreatedAt()
	}
	return n.posCreatedAt
}

func (n *listNode) isRemoved() bool { return n.entry == nil || n.entry.elem.IsRemoved() }

// GCKey implements GCChild.
func (n *listNode) GCKey() string { return n.posCreatedAt.Key() }

// RemovedAt implements GCChild.
func (n *listNode) RemovedAt() Ticket { return n.removedAt }

// DataSize implements GCChild: a dead position counts its tickets.
func (n *listNode) DataSize() DataSize {
	m := TicketSize
	if !n.removedAt.IsZero() {
		m += TicketSize
	}
	return DataSize{Meta: m}
}

// rgaList is the array's replicated growable array: a linked list of positions in document
// order behind a head anchor, with the positions by creation ticket and the elements by
// theirs. An element's first position is indexed under the element's ticket, so a position
// that a move emptied still answers for the element until it is collected, as in the SDK.
type rgaList struct {
	head    *listNode
	last    *listNode
	nodes   map[Ticket]*listNode
	entries map[Ticket]*arrayEntry
}

func newRGAList() rgaList {
	head := &listNode{posCreatedAt: InitialTicket}
	return rgaList{
		head:    head,
		last:    head,
		nodes:   map[Ticket]*listNode{InitialTicket: head},
		entries: make(map[Ticket]*arrayEntry),
	}
}

// linkAfter puts n right after prev.
func (l *rgaList) linkAfter(prev, n *listNode) {
	n.prev, n.next = prev, prev.next
	if prev.next != nil {
		prev.next.prev = n
	}
	prev.next = n
	if l.last == prev {
		l.last = n
	}
}

// release unlinks n and drops its index entry.
func (l *rgaList) release(n *listNode) {
	if l.last == n {
		l.last = n.prev
	}
	if n.prev != nil {
		n.prev.next = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	}
	n.prev, n.next = nil, nil
	delete(l.nodes, n.posCreatedAt)
}

// skipNewer walks past the positions after n made later than executedAt, so that of
// concurrent insertions at one place the newest comes first.
func skipNewer(n *listNode, executedAt Ticket) *listNode {
	for n.next != nil && n.next.positionedAt().After(executedAt) {
		n = n.next
	}
	return n
}

// insertAfter inserts elem after the position (or, failing that, the element) prevCreatedAt.
func (l *rgaList) insertAfter(prevCreatedAt Ticket, elem Element, executedAt Ticket) error {
	start, ok := l.nodes[prevCreatedAt]
	if !ok {
		e, ok := l.entries[prevCreatedAt]
		if !ok {
			return fmt.Errorf("%w: %s", ErrNodeNotFound, prevCreatedAt)
		}
		start = e.pos
	}
	prev := skipNewer(start, executedAt)
	entry := &arrayEntry{elem: elem}
	n := &listNode{entry: entry, posCreatedAt: elem.CreatedAt()}
	entry.pos = n
	l.linkAfter(prev, n)
	l.nodes[elem.CreatedAt()] = n
	l.entries[elem.CreatedAt()] = entry
	return nil
}

// insertPositionAfter adds an empty position made at executedAt after the position
// prevCreatedAt, which the caller has checked exists.
func (l *rgaList) insertPositionAfter(prevCreatedAt, executedAt Ticket) *listNode {
	prev := skipNewer(l.nodes[prevCreatedAt], executedAt)
	n := &listNode{posCreatedAt: executedAt}
	l.linkAfter(prev, n)
	l.nodes[executedAt] = n
	return n
}

// moveAfter moves the element createdAt to a new position after the position
// prevCreatedAt. The newest move of an element wins; a losing move still leaves its
// (dead) position so later operations can refer to it. It returns the position that died,
// nil when none did.
func (l *rgaList) moveAfter(prevCreatedAt, createdAt, executedAt Ticket) (*listNode, error) {
	if _, ok := l.nodes[prevCreatedAt]; !ok {
		return nil, fmt.Errorf("%w: %s", ErrNodeNotFound, prevCreatedAt)
	}
	entry, ok := l.entries[createdAt]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNodeNotFound, createdAt)
	}
	if !entry.posMovedAt.IsZero() && !executedAt.After(entry.posMovedAt) {
		if _, ok := l.nodes[executedAt]; ok {
			return nil, nil
		}
		dead := l.insertPositionAfter(prevCreatedAt, executedAt)
		dead.removedAt = executedAt
		return dead, nil
	}
	n := l.insertPositionAfter(prevCreatedAt, executedAt)
	old := entry.pos
	old.entry = nil
	old.removedAt = executedAt
	n.entry = entry
	entry.pos = n
	entry.posMovedAt = executedAt
	entry.elem.SetMovedAt(executedAt)
	return old, nil
}

// remove marks the element createdAt removed at executedAt and returns it.
func (l *rgaList) remove(createdAt, executedAt Ticket) (Element, error) {
	entry, ok := l.entries[createdAt]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNodeNotFound, createdAt)
	}
	entry.elem.Remove(executedAt)
	return entry.elem, nil
}

// purgeElement drops elem and its position for good.
func (l *rgaList) purgeElement(elem Element) {
	entry, ok := l.entries[elem.CreatedAt()]
	if !ok {
		return
	}
	delete(l.entries, elem.CreatedAt())
	l.release(entry.pos)
}

// appendDead adds a dead position at the end (decoding a snapshot).
func (l *rgaList) appendDead(posCreatedAt, removedAt Ticket) {
	n := &listNode{posCreatedAt: posCreatedAt, removedAt: removedAt}
	l.linkAfter(l.last, n)
	l.nodes[posCreatedAt] = n
}

// appendMoved adds an element that a move put at the position posCreatedAt at the end
// (decoding a snapshot).
func (l *rgaList) appendMoved(elem Element, posCreatedAt, posMovedAt Ticket) {
	entry := &arrayEntry{elem: elem, posMovedAt: posMovedAt}
	n := &listNode{entry: entry, posCreatedAt: posCreatedAt}
	entry.pos = n
	l.linkAfter(l.last, n)
	l.nodes[posCreatedAt] = n
	l.entries[elem.CreatedAt()] = entry
}
