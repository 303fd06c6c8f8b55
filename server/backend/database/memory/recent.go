package memory

import (
	"sync"
	"sync/atomic"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/fifo"
)

// Bounds of the recent changes kept decoded (see recentChanges).
const (
	// recentBudget is how many changes all documents keep decoded at most,
	// give or take one batch.
	recentBudget = 16384
	// recentPerDoc is how many of its newest changes a document keeps
	// decoded at least, once it has that many; it keeps at most twice as
	// many. It covers the default snapshot interval (500 changes), whose
	// changes are read again to build the next snapshot, with room for the
	// snapshotter to lag behind the pushes.
	recentPerDoc = 1024
)

// recentChanges keeps the newest changes of the documents written to last
// as the writers stored them, so that the pulls that follow a push (every
// other client of the document pulls what was just pushed) share them
// instead of decoding the log. It is bounded by recentBudget over all
// documents, so what the collector walks does not grow with the database.
// Documents are dropped from it in the order they entered it; one written to
// again enters again. Its zero value is ready to use.
//
// Lock order: doc.mu before recentChanges.mu; trim takes doc.mu itself, so
// it is called with no document locked.
type recentChanges struct {
	count atomic.Int64 // changes held over all documents

	mu   sync.Mutex
	docs fifo.Queue[*doc] // in the order they entered; the ones with recent set
}

// add records changes, just appended to d's log, as d's newest. The caller
// holds d.mu for writing and calls trim once it released it.
func (r *recentChanges) add(d *doc, changes []*database.Change) {
	before := len(d.recent)
	d.recent = append(d.recent, changes...)
	if n := len(d.recent); n > 2*recentPerDoc {
		// A fresh slice, so that the dropped changes are not kept alive by
		// the backing array.
		d.recent = append([]*database.Change(nil), d.recent[n-recentPerDoc:]...)
	}
	r.count.Add(int64(len(d.recent) - before))
	if d.held {
		return
	}
	d.held = true
	r.mu.Lock()
	r.docs.Push(d)
	r.mu.Unlock()
}

// forget drops d's recent changes, for a log that was replaced. The caller
// holds d.mu for writing.
func (r *recentChanges) forget(d *doc) {
	r.count.Add(-int64(len(d.recent)))
	d.recent = nil
}

// trim drops the recent changes of the documents that entered first until
// the budget holds. The caller holds no document's lock.
func (r *recentChanges) trim() {
	for r.count.Load() > recentBudget {
		r.mu.Lock()
		d, ok := r.docs.Pop()
		r.mu.Unlock()
		if !ok {
			return
		}
		d.mu.Lock()
		r.forget(d)
		d.held = false
		d.mu.Unlock()
	}
}

// recentFrom returns d's recent changes and the server_seq of the first of
// them: they are the last changes of the log. The caller holds d.mu.
func (d *doc) recentFrom() ([]*database.Change, int64) {
	return d.recent, d.head() - int64(len(d.recent)) + 1
}
