package crdt

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
)

// Text position errors. The document package maps them onto its sentinels.
var (
	// ErrTextNodeNotFound reports a position or node ID that names no node of the text.
	ErrTextNodeNotFound = errors.New("text node not found")
	// ErrTextOffset reports a position past the end of the node it resolves to.
	ErrTextOffset = errors.New("text offset out of node")
	// ErrTextDuplicateNode reports a node whose ID the text already holds.
	ErrTextDuplicateNode = errors.New("text node already exists")
)

// TextNodeID identifies a piece of text: the ticket of the edit that inserted it and the
// offset (in UTF-16 code units) of the piece within that insertion. Splitting a node gives
// the right part the same ticket and a larger offset.
type TextNodeID struct {
	CreatedAt Ticket
	Offset    int64
}

// Key is "createdAt:offset", the SDK's toIDString.
func (id TextNodeID) Key() string {
	return id.CreatedAt.Key() + ":" + strconv.FormatInt(id.Offset, 10)
}

// TextPos is a position in a text: RelativeOffset code units into the node named by ID.
type TextPos struct {
	ID             TextNodeID
	RelativeOffset int64
}

func (p TextPos) absolute() TextNodeID {
	return TextNodeID{CreatedAt: p.ID.CreatedAt, Offset: p.ID.Offset + p.RelativeOffset}
}

// TextNode is one piece of a text in the RGA: its content, attributes and removal, linked to
// its neighbours in document order (prev/next) and to the other pieces of its insertion
// (insPrev/insNext), which the position lookup uses to stay left of a split boundary.
type TextNode struct {
	id        TextNodeID
	value     *TextValue // nil only for the head
	removedAt Ticket

	prev, next       *TextNode
	insPrev, insNext *TextNode
}

// ID is the node's identity.
func (n *TextNode) ID() TextNodeID { return n.id }

// Value is the node's content and attributes.
func (n *TextNode) Value() *TextValue { return n.value }

// RemovedAt is the ticket of the node's removal, zero while live.
func (n *TextNode) RemovedAt() Ticket { return n.removedAt }

// IsRemoved reports whether the node is a tombstone.
func (n *TextNode) IsRemoved() bool { return !n.removedAt.IsZero() }

// InsPrev is the piece this node was split from (nil when none).
func (n *TextNode) InsPrev() *TextNode { return n.insPrev }

// GCKey is the node ID's key.
func (n *TextNode) GCKey() string { return n.id.Key() }

// DataSize counts the content (two bytes per UTF-16 code unit), the attributes, the ID's
// ticket and the removal ticket.
func (n *TextNode) DataSize() DataSize {
	s := n.value.DataSize()
	s.Meta += TicketSize
	if n.IsRemoved() {
		s.Meta += TicketSize
	}
	return s
}

func (n *TextNode) contentLen() int64 {
	if n.value == nil {
		return 0
	}
	return int64(len(n.value.content))
}

func (n *TextNode) setPrev(p *TextNode) {
	n.prev = p
	if p != nil {
		p.next = n
	}
}

func (n *TextNode) setInsPrev(p *TextNode) {
	n.insPrev = p
	if p != nil {
		p.insNext = n
	}
}

func (n *TextNode) setInsNext(p *TextNode) {
	n.insNext = p
	if p != nil {
		p.insPrev = n
	}
}

// rgaTreeSplit is the list of text pieces in document order with an index from node IDs to
// pieces: per insertion ticket, its pieces sorted by offset. Lookups by ID are a map access
// and a binary search; the server never needs index (character count) lookups.
type rgaTreeSplit struct {
	head  *TextNode
	tail  *TextNode // the last node, the head when empty
	byID  map[Ticket][]*TextNode
	count int // nodes after the head
}

func newRGATreeSplit() *rgaTreeSplit {
	head := &TextNode{id: TextNodeID{CreatedAt: InitialTicket}}
	s := &rgaTreeSplit{head: head, tail: head, byID: make(map[Ticket][]*TextNode)}
	s.byID[head.id.CreatedAt] = []*TextNode{head}
	return s
}

// floor returns the piece of id's insertion with the largest offset not after id's offset.
func (s *rgaTreeSplit) floor(id TextNodeID) *TextNode {
	pieces := s.byID[id.CreatedAt]
	if len(pieces) == 1 { // most insertions are never split
		if pieces[0].id.Offset <= id.Offset {
			return pieces[0]
		}
		return nil
	}
	i := sort.Search(len(pieces), func(i int) bool { return pieces[i].id.Offset > id.Offset })
	if i == 0 {
		return nil
	}
	return pieces[i-1]
}

// has reports whether the exact ID is indexed.
func (s *rgaTreeSplit) has(id TextNodeID) bool {
	n := s.floor(id)
	return n != nil && n.id.Offset == id.Offset
}

func (s *rgaTreeSplit) index(n *TextNode) {
	pieces := s.byID[n.id.CreatedAt]
	i := sort.Search(len(pieces), func(i int) bool { return pieces[i].id.Offset > n.id.Offset })
	pieces = append(pieces, nil)
	copy(pieces[i+1:], pieces[i:])
	pieces[i] = n
	s.byID[n.id.CreatedAt] = pieces
}

func (s *rgaTreeSplit) unindex(n *TextNode) {
	pieces := s.byID[n.id.CreatedAt]
	i := sort.Search(len(pieces), func(i int) bool { return pieces[i].id.Offset >= n.id.Offset })
	if i == len(pieces) || pieces[i] != n {
		return
	}
	if len(pieces) == 1 {
		delete(s.byID, n.id.CreatedAt)
		return
	}
	copy(pieces[i:], pieces[i+1:])
	pieces[len(pieces)-1] = nil
	s.byID[n.id.CreatedAt] = pieces[:len(pieces)-1]
}

// insertAfter links n after prev and indexes it.
func (s *rgaTreeSplit) insertAfter(prev, n *TextNode) {
	next := prev.next
	n.setPrev(prev)
	if next != nil {
		next.setPrev(n)
	} else {
		s.tail = n
	}
	s.index(n)
	s.count++
}

// findFloorPreferToLeft resolves an absolute ID to the node a position there belongs to: a
// position at a split boundary belongs to the piece left of it, when that piece still exists.
func (s *rgaTreeSplit) findFloorPreferToLeft(id TextNodeID) (*TextNode, error) {
	n := s.floor(id)
	if n == nil {
		return nil, fmt.Errorf("%w: %s", ErrTextNodeNotFound, id.Key())
	}
	if id.Offset > 0 && n.id.Offset == id.Offset && n.insPrev != nil {
		n = n.insPrev
	}
	return n, nil
}

// resolve finds the node and the offset in it that p names, without changing anything: the
// node must exist and the offset lie inside it.
func (s *rgaTreeSplit) resolve(p TextPos) (*TextNode, int64, error) {
	abs := p.absolute()
	n, err := s.findFloorPreferToLeft(abs)
	if err != nil {
		return nil, 0, err
	}
	rel := abs.Offset - n.id.Offset
	if rel > n.contentLen() || rel < 0 {
		return nil, 0, fmt.Errorf("%w: %s+%d is %d into a node of %d", ErrTextOffset, p.ID.Key(), p.RelativeOffset, rel, n.contentLen())
	}
	return n, rel, nil
}

// resolveRange resolves both ends of a range before anything changes (splitting never
// changes whether a position resolves).
func (s *rgaTreeSplit) resolveRange(from, to TextPos) (r resolvedRange, err error) {
	if r.to, r.toRel, err = s.resolve(to); err != nil {
		return r, err
	}
	if r.from, r.fromRel, err = s.resolve(from); err != nil {
		return r, err
	}
	return r, nil
}

type resolvedRange struct {
	from, to       *TextNode
	fromRel, toRel int64
}

// splitNode cuts n at offset and returns the new right piece (nil when offset is at either
// end) and the size the split adds. A removed node's right piece is removed too; as in the
// SDK, it is not registered for collection until the text is read back from a snapshot.
func (s *rgaTreeSplit) splitNode(n *TextNode, offset int64) (*TextNode, DataSize) {
	var diff DataSize
	if offset == 0 || offset == n.contentLen() {
		return nil, diff
	}
	before := n.DataSize()
	left, right := n.value.split(int(offset))
	n.value = left
	piece := &TextNode{
		id:        TextNodeID{CreatedAt: n.id.CreatedAt, Offset: n.id.Offset + offset},
		value:     right,
		removedAt: n.removedAt,
	}
	s.insertAfter(n, piece)
	if insNext := n.insNext; insNext != nil {
		insNext.setInsPrev(piece)
	}
	piece.setInsPrev(n)
	diff.Add(n.DataSize())
	diff.Add(piece.DataSize())
	diff.Sub(before)
	return piece, diff
}

// splitRange splits at both ends of a resolved range, the end first as the SDK does, and
// returns for each end the node an insertion there goes after and that node's next. The
// left node moves right past nodes inserted concurrently with a later ticket than editedAt:
// they keep the place next to the position.
func (s *rgaTreeSplit) splitRange(r resolvedRange, editedAt Ticket) (fromLeft, fromRight, toRight *TextNode, diff DataSize) {
	piece, d := s.splitNode(r.to, r.toRel)
	diff.Add(d)
	if piece != nil && r.from == r.to && r.fromRel > r.toRel {
		r.from, r.fromRel = piece, r.fromRel-r.toRel
	}
	toLeft := s.skipLater(r.to, editedAt)
	toRight = toLeft.next
	_, d = s.splitNode(r.from, r.fromRel)
	diff.Add(d)
	fromLeft = s.skipLater(r.from, editedAt)
	return fromLeft, fromLeft.next, toRight, diff
}

func (s *rgaTreeSplit) skipLater(n *TextNode, editedAt Ticket) *TextNode {
	for n.next != nil && n.next.id.CreatedAt.After(editedAt) {
		n = n.next
	}
	return n
}

// knownTo reports whether the change whose version vector is vv had seen t. A zero entry
// counts as unseen, as in the SDK.
func knownTo(vv VersionVector, t Ticket) bool {
	l, ok := vv[t.Actor]
	return ok && l != 0 && l >= t.Lamport
}

// deleteNodes marks removed the nodes from `from` up to (not including) `to` that the edit
// may remove, and returns them. A change with a version vector removes only nodes it had
// seen created, and overwrites an earlier removal only when it had not seen that removal and
// is later (last writer wins between concurrent removals). Without a vector (a local edit)
// every node counts as seen.
func (s *rgaTreeSplit) deleteNodes(from, to *TextNode, editedAt Ticket, vv VersionVector) []*TextNode {
	local := len(vv) == 0
	var removed []*TextNode
	for n := from; n != nil && n != to; n = n.next {
		creationKnown := local || knownTo(vv, n.id.CreatedAt)
		if !creationKnown {
			continue
		}
		if n.IsRemoved() {
			tombstoneKnown := local || knownTo(vv, n.removedAt)
			if tombstoneKnown || !editedAt.After(n.removedAt) {
				continue
			}
		}
		if !n.IsRemoved() || editedAt.After(n.removedAt) {
			n.removedAt = editedAt
		}
		removed = append(removed, n)
	}
	return removed
}

// purge unlinks a removed node for good.
func (s *rgaTreeSplit) purge(n *TextNode) {
	if n == s.head {
		return
	}
	pieces := s.byID[n.id.CreatedAt]
	i := sort.Search(len(pieces), func(i int) bool { return pieces[i].id.Offset >= n.id.Offset })
	if i == len(pieces) || pieces[i] != n {
		return // purged already
	}
	s.unindex(n)
	s.count--
	prev, next := n.prev, n.next
	if prev != nil {
		prev.next = next
	}
	if next != nil {
		next.prev = prev
	} else {
		s.tail = prev
	}
	n.prev, n.next = nil, nil
	insPrev, insNext := n.insPrev, n.insNext
	if insPrev != nil {
		insPrev.setInsNext(insNext)
	}
	if insNext != nil {
		insNext.setInsPrev(insPrev)
	}
	n.insPrev, n.insNext = nil, nil
}
