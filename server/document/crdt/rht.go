package crdt

// RHTNode is one attribute of a text node: a key, its value and the ticket of the last set
// or removal. A removed attribute keeps its value (the SDK writes it into snapshots) and is
// a GC child whose removal ticket is its update ticket.
type RHTNode struct {
	key       string
	value     string
	updatedAt Ticket
	removed   bool
}

// Key is the attribute's name.
func (n *RHTNode) Key() string { return n.key }

// Value is the attribute's value (JSON text, as the SDK stores it).
func (n *RHTNode) Value() string { return n.value }

// UpdatedAt is the ticket of the set or removal that made this node.
func (n *RHTNode) UpdatedAt() Ticket { return n.updatedAt }

// IsRemoved reports whether the node records a removal.
func (n *RHTNode) IsRemoved() bool { return n.removed }

// GCKey is "updatedAt:key", the SDK's toIDString. Every node one style removes shares it.
func (n *RHTNode) GCKey() string { return n.updatedAt.Key() + ":" + n.key }

// RemovedAt is the update ticket of a removed node, zero for a live one.
func (n *RHTNode) RemovedAt() Ticket {
	if n.removed {
		return n.updatedAt
	}
	return Ticket{}
}

// DataSize counts key and value in UTF-16 code units and one ticket.
func (n *RHTNode) DataSize() DataSize {
	return DataSize{Data: 2 * (utf16Len(n.key) + utf16Len(n.value)), Meta: TicketSize}
}

func (n *RHTNode) isAttribute() {}

// RHT is a replicated hash table of attributes whose last writer by ticket wins. Nodes keep
// the order their keys were first set (a JS Map's order), which is the order snapshots list
// them in. Text nodes hold only a few attributes, so a slice beats a map here.
type RHT struct {
	nodes   []*RHTNode
	removed int
}

func (r *RHT) find(key string) (int, *RHTNode) {
	for i, n := range r.nodes {
		if n.key == key {
			return i, n
		}
	}
	return -1, nil
}

func (r *RHT) put(i int, n *RHTNode) {
	if i < 0 {
		r.nodes = append(r.nodes, n)
		return
	}
	r.nodes[i] = n
}

// Set sets key to value at t unless a later write holds the key. It returns the removed node
// it replaced or lost to (a GC child to register again, which cancels its registration) and
// the node it wrote (nil when t lost).
func (r *RHT) Set(key, value string, t Ticket) (prevRemoved, written *RHTNode) {
	i, prev := r.find(key)
	if prev != nil && prev.removed && t.After(prev.updatedAt) {
		r.removed--
	}
	if prev == nil || t.After(prev.updatedAt) {
		n := &RHTNode{key: key, value: value, updatedAt: t}
		r.put(i, n)
		if prev != nil && prev.removed {
			return prev, n
		}
		return nil, n
	}
	if prev.removed {
		return prev, nil
	}
	return nil, nil
}

// setInternal stores a copied node.
func (r *RHT) setInternal(key, value string, t Ticket, removed bool) {
	i, _ := r.find(key)
	r.put(i, &RHTNode{key: key, value: value, updatedAt: t, removed: removed})
	if removed {
		r.removed++
	}
}

// Remove marks key removed at t unless a later write holds it, and returns the nodes to
// register for collection: the new removal and, when the key was already removed, the
// earlier removal (whose second registration cancels it).
func (r *RHT) Remove(key string, t Ticket) []*RHTNode {
	i, prev := r.find(key)
	if prev == nil {
		r.removed++
		n := &RHTNode{key: key, updatedAt: t, removed: true}
		r.put(i, n)
		return []*RHTNode{n}
	}
	if !t.After(prev.updatedAt) {
		return nil
	}
	n := &RHTNode{key: key, value: prev.value, updatedAt: t, removed: true}
	r.put(i, n)
	if prev.removed {
		return []*RHTNode{prev, n}
	}
	r.removed++
	return []*RHTNode{n}
}

// Get returns the node of key, live or removed.
func (r *RHT) Get(key string) (*RHTNode, bool) {
	_, n := r.find(key)
	return n, n != nil
}

// Len is the number of live attributes.
func (r *RHT) Len() int { return len(r.nodes) - r.removed }

// Nodes returns every node, removed ones included, in key order of first set. The caller
// must not modify the slice.
func (r *RHT) Nodes() []*RHTNode { return r.nodes }

// Purge drops child for good if it is still the key's node.
func (r *RHT) Purge(child *RHTNode) {
	i, n := r.find(child.key)
	if n == nil || n.GCKey() != child.GCKey() {
		return
	}
	r.nodes = append(r.nodes[:i], r.nodes[i+1:]...)
	r.removed--
}

// DeepCopy copies the table; nodes are immutable, but the copy gets nodes of its own so that
// purging one table never touches the other.
func (r *RHT) DeepCopy() *RHT {
	c := &RHT{nodes: make([]*RHTNode, 0, len(r.nodes))}
	for _, n := range r.nodes {
		c.setInternal(n.key, n.value, n.updatedAt, n.removed)
	}
	return c
}
