package crdt

// treeAttr is one attribute of a tree element: a last-writer-wins register that stays as a
// tombstone once removed.
type treeAttr struct {
	key       string
	value     string
	updatedAt Ticket
	removed   bool
}

// GCKey implements GCChild: "updatedAt:key", the SDK's toIDString.
func (a *treeAttr) GCKey() string { return a.updatedAt.Key() + ":" + a.key }

// RemovedAt implements GCChild: a removed attribute was removed when it was last updated.
func (a *treeAttr) RemovedAt() Ticket {
	if a.removed {
		return a.updatedAt
	}
	return Ticket{}
}

// DataSize implements GCChild: key and value as UTF-16 code units times two, and a ticket.
func (a *treeAttr) DataSize() DataSize {
	return DataSize{Data: (utf16Len(a.key) + utf16Len(a.value)) * 2, Meta: TicketSize}
}

func (a *treeAttr) isAttribute() {}

// treeAttrs is the attribute table of an element, in the order keys were first set (the SDK
// holds it in a JS Map, whose order its JSON shows).
type treeAttrs struct {
	nodes []*treeAttr
}

func (t *treeAttrs) find(key string) (int, *treeAttr) {
	for i, a := range t.nodes {
		if a.key == key {
			return i, a
		}
	}
	return -1, nil
}

func (t *treeAttrs) get(key string) *treeAttr {
	_, a := t.find(key)
	return a
}

// put replaces the node of a key in place, or appends it.
func (t *treeAttrs) put(a *treeAttr) {
	if i, _ := t.find(a.key); i >= 0 {
		t.nodes[i] = a
		return
	}
	t.nodes = append(t.nodes, a)
}

// set writes value at executedAt if it is newer than what the key holds. It returns the
// removed node it replaced or that outlived it (for collection) and the node it wrote.
func (t *treeAttrs) set(key, value string, executedAt Ticket) (prevRemoved, written *treeAttr) {
	prev := t.get(key)
	if prev == nil || executedAt.After(prev.updatedAt) {
		node := &treeAttr{key: key, value: value, updatedAt: executedAt}
		t.put(node)
		if prev != nil && prev.removed {
			return prev, node
		}
		return nil, node
	}
	if prev.removed {
		return prev, nil
	}
	return nil, nil
}

func (t *treeAttrs) setInternal(key, value string, updatedAt Ticket, removed bool) {
	t.put(&treeAttr{key: key, value: value, updatedAt: updatedAt, removed: removed})
}

// remove marks the key removed at executedAt if that is newer than its value, and returns the
// tombstones to collect: the new one, and the one it replaced if that was a tombstone too.
func (t *treeAttrs) remove(key string, executedAt Ticket) []*treeAttr {
	prev := t.get(key)
	if prev != nil && !executedAt.After(prev.updatedAt) {
		return nil
	}
	if prev == nil {
		node := &treeAttr{key: key, updatedAt: executedAt, removed: true}
		t.put(node)
		return []*treeAttr{node}
	}
	var gc []*treeAttr
	if prev.removed {
		gc = append(gc, prev)
	}
	node := &treeAttr{key: key, value: prev.value, updatedAt: executedAt, removed: true}
	t.put(node)
	return append(gc, node)
}

// purge drops a collected tombstone if the key still holds it.
func (t *treeAttrs) purge(child *treeAttr) {
	i, a := t.find(child.key)
	if a == nil || a.GCKey() != child.GCKey() {
		return
	}
	copy(t.nodes[i:], t.nodes[i+1:])
	t.nodes[len(t.nodes)-1] = nil
	t.nodes = t.nodes[:len(t.nodes)-1]
}

func (t *treeAttrs) deepCopy() *treeAttrs {
	if t == nil {
		return nil
	}
	c := &treeAttrs{nodes: make([]*treeAttr, len(t.nodes))}
	for i, a := range t.nodes {
		cp := *a
		c.nodes[i] = &cp
	}
	return c
}
