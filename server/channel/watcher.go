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
// rather than silently missing some.
type Watcher struct {
	m      *Manager
	client string
	key    string

	messages chan Message
	counted  chan struct{}

	mu      sync.Mutex
	count   Count
	changed bool

	done    chan struct{}
	endOnce sync.Once
	err     error
}

// Key returns the watched channel's key.
func (w *Watcher) Key() string { return w.key }

// Messages delivers the broadcasts of other clients.
func (w *Watcher) Messages() <-chan Message { return w.messages }

// Counted fires when the count changed since the last LatestCount.
func (w *Watcher) Counted() <-chan struct{} { return w.counted }

// LatestCount returns the newest count; changed says whether it differs
// from the one returned before (the first call always reports the count at
// Watch time as changed=false: it is the initial count).
func (w *Watcher) LatestCount() (Count, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, changed := w.count, w.changed
	w.changed = false
	return c, changed
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
	select {
	case w.counted <- struct{}{}:
	default:
	}
}

// deliver queues msg; false when the queue is full.
func (w *Watcher) deliver(msg Message) bool {
	select {
	case w.messages <- msg:
		return true
	default:
		return false
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
