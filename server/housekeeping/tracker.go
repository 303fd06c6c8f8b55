package housekeeping

import (
	"maps"
	"slices"
	"sync"
)

// Tracker collects which clients called this node since its last flush, so
// that their activity reaches the database in one batched write per
// interval instead of one write per call. Recording a call costs a map read
// once the client is known in the current interval.
type Tracker struct {
	seen sync.Map // client ID -> struct{}, since the last drain

	mu       sync.Mutex
	watching map[string]int // client ID -> Watch streams open on this node
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{watching: make(map[string]int)}
}

// Seen records a call of the client.
func (t *Tracker) Seen(clientID string) {
	if clientID == "" {
		return
	}
	if _, ok := t.seen.Load(clientID); !ok {
		t.seen.Store(clientID, struct{}{})
	}
}

// Watching records a Watch stream of the client opened on this node; the
// client counts as active while it is open, however quiet the document.
// The returned function records its end; calling it more than once is
// harmless.
func (t *Tracker) Watching(clientID string) (closed func()) {
	t.mu.Lock()
	t.watching[clientID]++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			if t.watching[clientID]--; t.watching[clientID] <= 0 {
				delete(t.watching, clientID)
			}
			t.mu.Unlock()
			t.Seen(clientID) // the stream was activity until now
		})
	}
}

// drain returns the clients seen since the last drain, and those with an
// open stream, each once, and starts a new interval.
func (t *Tracker) drain() []string {
	set := make(map[string]struct{})
	t.seen.Range(func(k, _ any) bool {
		t.seen.Delete(k)
		set[k.(string)] = struct{}{}
		return true
	})
	t.mu.Lock()
	for id := range t.watching {
		set[id] = struct{}{}
	}
	t.mu.Unlock()
	return slices.Collect(maps.Keys(set))
}

// restore puts back clients whose activity could not be written, so the
// next flush tries again.
func (t *Tracker) restore(ids []string) {
	for _, id := range ids {
		t.Seen(id)
	}
}
