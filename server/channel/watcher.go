package channel

import "sync"

// Count is a channel's session count at a sequence number; clients keep the
// count with the highest one.
type Count struct {
	Sessions int64
	Seq      int64
}

// Message is one broadcast.
type Message struct {
	Publisher string
	Topic     string
	Payload   []byte
}

// Watcher receives one channel's counts and broadcasts. Counts are
// coalesced (a watcher that reads late gets the latest one); broadcasts are
// queued, and a watcher whose queue fills up is ended with ErrSlowWatcher
// rather than silently missing some. The queue is a slice that grows only
// while messages wait, so an idle watcher costs a few hundred bytes.
type Watcher struct {
	m      *Manager
	client string
	key    string
	limit  int

	ready chan struct{}

	mu      sync.Mutex
	count   Count
	changed bool
	queue   []Message

	done    chan struct{}
	endOnce sync.Once
	err     error
}

// Key returns the watched channel's key.
func (w *Watcher) Key() string { return w.key }

// Ready fires when a count or a broadcast arrived since the last Take.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// LatestCount returns the newest count; changed says whether it is newer
// than the one returned before (the count at Watch time counts as seen).
func (w *Watcher) LatestCount() (Count, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, changed := w.count, w.changed
	w.changed = false
	return c, changed
}

// Take returns the broadcasts that arrived since the last Take, oldest
// first, and the newest count with whether it is new.
func (w *Watcher) Take() ([]Message, Count, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := w.queue
	w.queue = nil
	c, changed := w.count, w.changed
	w.changed = false
	return msgs, c, changed
}

// Done is closed when the watcher was ended by the manager; Err says why.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err returns why the manager ended the watcher.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close unsubscribes the watcher.
func (w *Watcher) Close() {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	w.m.dropWatcherLocked(w, nil)
}

func (w *Watcher) setCount(c Count) {
	w.mu.Lock()
	if c.Seq > w.count.Seq {
		w.count = c
		w.changed = true
	}
	w.mu.Unlock()
	w.signal()
}

// deliver queues msg; false when the queue is full.
func (w *Watcher) deliver(msg Message) bool {
	w.mu.Lock()
	if len(w.queue) >= w.limit {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, msg)
	w.mu.Unlock()
	w.signal()
	return true
}

func (w *Watcher) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *Watcher) end(cause error) {
	w.endOnce.Do(func() {
		w.mu.Lock()
		w.err = cause
		w.mu.Unlock()
		close(w.done)
	})
}
