package crdt

// elementPair is an element and the container that holds it (nil for the root object).
type elementPair struct {
	elem   Element
	parent Container
}

// Root is a document's element tree with the indexes operations need: every element by its
// creation ticket, the removed elements and the removed nodes waiting for collection, and the
// document's size.
type Root struct {
	object   Container
	elements map[Ticket]elementPair
	// removed holds the removed elements waiting for collection, each with the sequence
	// number of its registration; removedOrder lists them in registration order, as the
	// SDK's Set iterates them: an element an undo put back shares its ID with a child of a
	// removed container, and which one collection visits first decides what it subtracts.
	// Entries whose seq no longer matches the table are stale.
	removed      map[Ticket]uint64
	removedOrder []removedSlot
	removedSeq   uint64
	gcPairs      map[string]gcEntry
	// gcOrder lists the pairs in registration order, as the SDK's Map iterates them: purging
	// in another order leaves different split links behind when nodes share an ID (nodes an
	// undo put back). Entries whose seq no longer matches the table are stale.
	gcOrder []gcSlot
	gcSeq   uint64
	size    DocSize
}

// NewRoot indexes the tree under object, registering its removed elements and nodes for
// collection (as after decoding a snapshot).
func NewRoot(object Container) *Root {
	r := &Root{
		object:   object,
		elements: make(map[Ticket]elementPair),
		removed:  make(map[Ticket]uint64),
		gcPairs:  make(map[string]gcEntry),
	}
	r.RegisterElement(object, nil)
	object.Descendants(func(elem Element, _ Container) bool {
		if elem.IsRemoved() {
			r.RegisterRemovedElement(elem)
		}
		if h, ok := elem.(interface{ GCPairs() []GCPair }); ok {
			for _, p := range h.GCPairs() {
				r.RegisterGCPair(p)
			}
		}
		return false
	})
	return r
}

// Object is the root object.
func (r *Root) Object() Container { return r.object }

// Find returns the element created at t, if the root holds it.
func (r *Root) Find(t Ticket) (Element, bool) {
	p, ok := r.elements[t]
	return p.elem, ok
}

// Parent returns the container of the element created at t (nil for the root object).
func (r *Root) Parent(t Ticket) (Container, bool) {
	p, ok := r.elements[t]
	return p.parent, ok
}

// RegisterElement indexes elem, and its descendants when it is a container, under parent.
func (r *Root) RegisterElement(elem Element, parent Container) {
	r.elements[elem.CreatedAt()] = elementPair{elem: elem, parent: parent}
	r.size.Live.Add(elem.DataSize())
	if c, ok := elem.(Container); ok {
		c.Descendants(func(e Element, p Container) bool {
			r.elements[e.CreatedAt()] = elementPair{elem: e, parent: p}
			r.size.Live.Add(e.DataSize())
			return false
		})
	}
}

// deregister drops elem and its descendants from the indexes and returns how many it dropped.
func (r *Root) deregister(elem Element) int {
	n := 0
	drop := func(e Element) {
		r.size.GC.Sub(e.DataSize())
		delete(r.elements, e.CreatedAt())
		delete(r.removed, e.CreatedAt())
		n++
	}
	drop(elem)
	if c, ok := elem.(Container); ok {
		c.Descendants(func(e Element, _ Container) bool {
			drop(e)
			return false
		})
	}
	return n
}

// RegisterRemovedElement records that elem was removed, so that it is collected later.
func (r *Root) RegisterRemovedElement(elem Element) {
	s := elem.DataSize()
	r.size.GC.Add(s)
	r.size.Live.Sub(s)
	// The parent keeps the removal ticket of the child it marked.
	r.size.Live.Meta += TicketSize
	t := elem.CreatedAt()
	if _, ok := r.removed[t]; ok {
		// A Set keeps its first place when the same element is added again.
		return
	}
	r.removedSeq++
	r.removed[t] = r.removedSeq
	r.removedOrder = append(r.removedOrder, removedSlot{ticket: t, seq: r.removedSeq})
}

// RegisterGCPair records a removed node for collection. Registering the same child twice
// cancels it, as the SDK does (a node removed and then revived by a later style).
func (r *Root) RegisterGCPair(p GCPair) {
	key := p.Child.GCKey()
	if _, ok := r.gcPairs[key]; ok {
		delete(r.gcPairs, key)
		r.compactGCOrder()
		return
	}
	r.gcSeq++
	r.gcPairs[key] = gcEntry{pair: p, seq: r.gcSeq}
	r.gcOrder = append(r.gcOrder, gcSlot{key: key, seq: r.gcSeq})
	s := p.Child.DataSize()
	r.size.GC.Add(s)
	r.size.Live.Sub(s)
	if _, ok := p.Child.(attributeNode); !ok {
		r.size.Live.Meta += TicketSize
	}
}

// AddLiveSize adds an operation's size difference to the live size.
func (r *Root) AddLiveSize(d DataSize) { r.size.Live.Add(d) }

// Size is the document's size as the SDK counts it.
func (r *Root) Size() DocSize { return r.size }

// ElementCount is the number of indexed elements, the root object included.
func (r *Root) ElementCount() int { return len(r.elements) }

// GarbageLen is the number of removed elements (with their descendants) and nodes that are
// not collected yet, the SDK's getGarbageLen.
func (r *Root) GarbageLen() int {
	seen := make(map[Ticket]struct{}, len(r.removed))
	for t := range r.removed {
		seen[t] = struct{}{}
		if c, ok := r.elements[t].elem.(Container); ok {
			c.Descendants(func(e Element, _ Container) bool {
				seen[e.CreatedAt()] = struct{}{}
				return false
			})
		}
	}
	return len(seen) + len(r.gcPairs)
}

// GarbageCollect purges every removed element and node whose removal minSynced has seen, and
// returns how many it purged.
func (r *Root) GarbageCollect(minSynced VersionVector) int {
	n := 0
	// Elements dropped along the way (descendants of a collected container) are not
	// visited: the slot no longer matches, as the SDK's Set skips deleted entries.
	for i := 0; i < len(r.removedOrder); i++ {
		slot := r.removedOrder[i]
		if seq, ok := r.removed[slot.ticket]; !ok || seq != slot.seq {
			continue
		}
		t := slot.ticket
		p, ok := r.elements[t]
		// An element registered as removed may still be live (a removal that lost to a
		// later re-set, or one not after its creation): it has no removal to collect. An
		// element with no parent (the SDK registers an ArraySet's new value without one)
		// cannot be purged; the SDK throws there, we leave it.
		if !ok || p.parent == nil || p.elem.RemovedAt().IsZero() {
			continue
		}
		if minSynced.AfterOrEqual(p.elem.RemovedAt()) {
			p.parent.Purge(p.elem)
			n += r.deregister(p.elem)
		}
	}
	for _, slot := range r.gcOrder {
		e, ok := r.gcPairs[slot.key]
		if !ok || e.seq != slot.seq {
			continue
		}
		p := e.pair
		if rm := p.Child.RemovedAt(); !rm.IsZero() && minSynced.AfterOrEqual(rm) {
			p.Parent.PurgeNode(p.Child)
			r.size.GC.Sub(p.Child.DataSize())
			delete(r.gcPairs, slot.key)
			n++
		}
	}
	r.compactGCOrder()
	r.compactRemovedOrder()
	return n
}

// removedSlot is a place in the registration order of removed elements.
type removedSlot struct {
	ticket Ticket
	seq    uint64
}

// compactRemovedOrder drops stale slots once they outnumber the live ones.
func (r *Root) compactRemovedOrder() {
	if len(r.removedOrder) < 2*len(r.removed)+32 {
		return
	}
	live := r.removedOrder[:0]
	for _, slot := range r.removedOrder {
		if seq, ok := r.removed[slot.ticket]; ok && seq == slot.seq {
			live = append(live, slot)
		}
	}
	clear(r.removedOrder[len(live):])
	r.removedOrder = live
}

// JSON is the document as the SDK's toSortedJSON writes it.
func (r *Root) JSON() string { return string(r.object.JSON(nil)) }

// gcEntry is a registered pair and the sequence number of its registration.
type gcEntry struct {
	pair GCPair
	seq  uint64
}

// gcSlot is a place in the registration order.
type gcSlot struct {
	key string
	seq uint64
}

// compactGCOrder drops stale slots once they outnumber the live ones.
func (r *Root) compactGCOrder() {
	if len(r.gcOrder) < 2*len(r.gcPairs)+32 {
		return
	}
	live := r.gcOrder[:0]
	for _, slot := range r.gcOrder {
		if e, ok := r.gcPairs[slot.key]; ok && e.seq == slot.seq {
			live = append(live, slot)
		}
	}
	clear(r.gcOrder[len(live):])
	r.gcOrder = live
}
