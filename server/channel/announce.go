package channel

// Announce hands the watcher its channel's current count again, under a
// sequence number above every earlier one, so that its stream carries a
// count event after the initialization.
//
// The SDK publishes its 'initialized' presence event while attach() is
// still running, before the caller can subscribe; a client that attaches a
// channel and then subscribes to 'presence' hears the count only from an
// event after it, as against upstream. Announcing a closed watcher does
// nothing.
func (w *Watcher) Announce() {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	n, ok := m.nodes[w.key]
	if !ok {
		return
	}
	if _, watching := n.watchers[w]; !watching {
		return
	}
	w.setCount(Count{Sessions: int64(n.total), Seq: m.nextSeqLocked()})
}
