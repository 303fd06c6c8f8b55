package crdt

// rhtMember is one member of an object: a key and the element set under it. Members live in
// a doubly linked list in the order they were first inserted, the order the SDK iterates
// them (and so encodes them in snapshots).
type rhtMember struct {
	key        string
	elem       Element
	prev, next *rhtMember
}

// elementRHT is an object's members: every element ever set (removed ones included until
// they are purged) by creation ticket, and for each key the member that currently wins it.
type elementRHT struct {
	head, tail  *rhtMember
	byCreatedAt map[Ticket]*rhtMember
	byKey       map[string]*rhtMember
}

func newElementRHT() elementRHT {
	return elementRHT{
		byCreatedAt: make(map[Ticket]*rhtMember),
		byKey:       make(map[string]*rhtMember),
	}
}

// append adds m at the end of the order and returns it. A member with the creation ticket
// of one already held (an undone removal sets the same element again) takes that one's
// place in the order instead, as a JS Map keeps a re-set key where it was; the old member
// stays wherever else it is referenced (as the winner of its key).
func (h *elementRHT) append(m *rhtMember) *rhtMember {
	if old, ok := h.byCreatedAt[m.elem.CreatedAt()]; ok {
		m.prev, m.next = old.prev, old.next
		if old.prev == nil {
			h.head = m
		} else {
			old.prev.next = m
		}
		if old.next == nil {
			h.tail = m
		} else {
			old.next.prev = m
		}
		old.prev, old.next = nil, nil
		h.byCreatedAt[m.elem.CreatedAt()] = m
		return m
	}
	h.byCreatedAt[m.elem.CreatedAt()] = m
	m.prev = h.tail
	if h.tail == nil {
		h.head = m
	} else {
		h.tail.next = m
	}
	h.tail = m
	return m
}

func (h *elementRHT) unlink(m *rhtMember) {
	if m.prev == nil {
		h.head = m.next
	} else {
		m.prev.next = m.next
	}
	if m.next == nil {
		h.tail = m.prev
	} else {
		m.next.prev = m.prev
	}
	m.prev, m.next = nil, nil
}

// set puts elem under key at executedAt and returns the element it displaced, if any. The
// newer of the two by positioned ticket wins the key; a loser is marked removed so that it
// never shows up beside the winner.
func (h *elementRHT) set(key string, elem Element, executedAt Ticket) Element {
	var displaced Element
	cur := h.byKey[key]
	if cur != nil && !cur.elem.IsRemoved() && cur.elem.Remove(executedAt) {
		displaced = cur.elem
	}
	member := h.append(&rhtMember{key: key, elem: elem})
	switch {
	case cur == nil || executedAt.After(cur.elem.PositionedAt()):
		h.byKey[key] = member
		elem.SetMovedAt(executedAt)
	case !cur.elem.IsRemoved():
		elem.Remove(cur.elem.PositionedAt())
	}
	return displaced
}

// removeByCreatedAt marks the member created at createdAt removed at executedAt.
func (h *elementRHT) removeByCreatedAt(createdAt, executedAt Ticket) (Element, bool) {
	m, ok := h.byCreatedAt[createdAt]
	if !ok {
		return nil, false
	}
	m.elem.Remove(executedAt)
	return m.elem, true
}

// purge drops elem for good.
func (h *elementRHT) purge(elem Element) bool {
	m, ok := h.byCreatedAt[elem.CreatedAt()]
	if !ok {
		return false
	}
	if h.byKey[m.key] == m {
		delete(h.byKey, m.key)
	}
	delete(h.byCreatedAt, elem.CreatedAt())
	h.unlink(m)
	return true
}

// get returns the live element that holds key.
func (h *elementRHT) get(key string) (Element, bool) {
	m, ok := h.byKey[key]
	if !ok || m.elem.IsRemoved() {
		return nil, false
	}
	return m.elem, true
}
