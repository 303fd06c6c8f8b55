package crdt

// DataSize is what an element or node counts for in a document's size, as the SDK counts it:
// Data is the content (UTF-16 code units times two for strings), Meta the tickets and other
// bookkeeping.
type DataSize struct {
	Data int
	Meta int
}

// Add adds o to s.
func (s *DataSize) Add(o DataSize) { s.Data += o.Data; s.Meta += o.Meta }

// Sub subtracts o from s.
func (s *DataSize) Sub(o DataSize) { s.Data -= o.Data; s.Meta -= o.Meta }

// Total is Data plus Meta.
func (s DataSize) Total() int { return s.Data + s.Meta }

// DocSize is a document's size: live content and garbage not collected yet.
type DocSize struct {
	Live DataSize
	GC   DataSize
}

// Total is the live and garbage totals together, the figure the size limit applies to.
func (d DocSize) Total() int { return d.Live.Total() + d.GC.Total() }

// Element is a value in the document tree: a container (Object, Array) or a leaf (Primitive,
// Counter, Text, Tree). Its creation ticket is its identity.
type Element interface {
	CreatedAt() Ticket
	// MovedAt is the ticket of the last move (zero when never moved).
	MovedAt() Ticket
	// RemovedAt is the ticket of its removal (zero while live).
	RemovedAt() Ticket
	// PositionedAt is MovedAt when set, else CreatedAt; arrays order by it.
	PositionedAt() Ticket
	SetMovedAt(t Ticket) bool
	SetRemovedAt(t Ticket)
	// Remove marks the element removed at t if t is after its creation and any earlier
	// removal, and reports whether it did.
	Remove(t Ticket) bool
	IsRemoved() bool
	DataSize() DataSize
	// JSON writes the element as the SDK's toSortedJSON does (object keys sorted).
	JSON(b []byte) []byte
	DeepCopy() Element
}

// Container is an element that holds other elements.
type Container interface {
	Element
	// Purge drops a removed child for good (garbage collection).
	Purge(child Element)
	// Descendants calls fn for every element below the container, depth first, with its
	// parent; it stops when fn returns true.
	Descendants(fn func(elem Element, parent Container) bool) bool
	// SubPathOf names a child in a path ("key" or "index"), false when it is not a child.
	SubPathOf(createdAt Ticket) (string, bool)
}

// base holds the tickets every element has. Element types embed it.
type base struct {
	createdAt Ticket
	movedAt   Ticket
	removedAt Ticket
}

func (b *base) CreatedAt() Ticket { return b.createdAt }
func (b *base) MovedAt() Ticket   { return b.movedAt }
func (b *base) RemovedAt() Ticket { return b.removedAt }
func (b *base) IsRemoved() bool   { return !b.removedAt.IsZero() }

func (b *base) PositionedAt() Ticket {
	if b.movedAt.IsZero() {
		return b.createdAt
	}
	return b.movedAt
}

func (b *base) SetMovedAt(t Ticket) bool {
	if b.movedAt.IsZero() || t.After(b.movedAt) {
		b.movedAt = t
		return true
	}
	return false
}

func (b *base) SetRemovedAt(t Ticket) { b.removedAt = t }

func (b *base) Remove(t Ticket) bool {
	if t.After(b.createdAt) && (b.removedAt.IsZero() || t.After(b.removedAt)) {
		b.removedAt = t
		return true
	}
	return false
}

// metaSize counts the tickets the element carries.
func (b *base) metaSize() int {
	m := TicketSize
	if !b.movedAt.IsZero() {
		m += TicketSize
	}
	if !b.removedAt.IsZero() {
		m += TicketSize
	}
	return m
}

// GCParent holds nodes that are collected one by one (text and tree nodes, array positions,
// text attributes).
type GCParent interface {
	PurgeNode(child GCChild)
}

// GCChild is a removed node inside an element, collected once every replica has seen its
// removal.
type GCChild interface {
	// GCKey identifies the node among all of the document's pairs (the SDK's toIDString).
	GCKey() string
	RemovedAt() Ticket
	DataSize() DataSize
}

// attributeNode is implemented by GC children that carry no removal ticket of their own
// (text attributes), whose removal therefore adds no meta to the live size.
type attributeNode interface {
	GCChild
	isAttribute()
}

// GCPair is a removed node with the parent that can purge it.
type GCPair struct {
	Parent GCParent
	Child  GCChild
}
