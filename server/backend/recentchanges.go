package backend

import (
	"sync"
	"sync/atomic"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/fifo"
)

// recentWindow is how many of a document's newest changes its owner keeps as
// it stored them, once it has that many; it keeps at most twice as many.
// Every watcher pulls right after each push, so a pull normally asks for the
// last few changes only.
const recentWindow = 128

// recentBudget bounds the changes the windows of all documents hold, give
// or take one batch: the pulls a window saves follow a push closely, so the
// documents written to last keep theirs, and a node serving many documents
// does not keep a decoded change (about 1.5 KiB for a presence change) for
// every document it ever wrote to.
const recentBudget = 8192

// changeWindow holds the newest changes of a document as this node appended
// them, consecutive by server_seq, so that the pulls that follow a push are
// served without reading the log back from the database while the document's
// lock is held. The changes are the rows handed to the database (the memory
// database keeps the same ones), shared and never changed. Anything the
// window does not cover is read from the database. It lives in the
// document's state and is emptied whenever the built document is dropped
// (compaction, a failed or unsure write, a conflict, eviction, release or
// handoff) and on every load, so it never outlives the history it copies.
// The caller holds the document's lock.
type changeWindow struct {
	changes []*database.Change
	// held counts the changes of every window (the backend's budget; nil:
	// not counted), queued says whether the document is in its queue.
	held   *atomic.Int64
	queued bool
}

// appended records rows, just appended to the log, as the newest changes.
// Rows that do not follow the window start it again.
func (w *changeWindow) appended(rows []*database.Change) {
	if len(rows) == 0 {
		return
	}
	before := len(w.changes)
	if n := len(w.changes); n > 0 && w.changes[n-1].ServerSeq+1 != rows[0].ServerSeq {
		w.changes = nil
	}
	w.changes = append(w.changes, rows...)
	if n := len(w.changes); n > 2*recentWindow {
		// A fresh slice, so that the dropped changes are not kept alive by
		// the backing array.
		w.changes = append([]*database.Change(nil), w.changes[n-recentWindow:]...)
	}
	w.count(len(w.changes) - before)
}

// reset empties the window.
func (w *changeWindow) reset() {
	w.count(-len(w.changes))
	w.changes = nil
}

func (w *changeWindow) count(delta int) {
	if w.held != nil && delta != 0 {
		w.held.Add(int64(delta))
	}
}

// windowBudget keeps the windows of all documents within recentBudget
// changes: documents enter its queue when their window fills, and the ones
// that entered first are emptied while the budget is exceeded.
type windowBudget struct {
	limit int64
	held  atomic.Int64

	mu    sync.Mutex
	queue fifo.Queue[*docState] // in the order they entered; the ones queued
}

// keepRecent records rows, just appended to ds's log, in ds's window, and
// empties the windows of the documents written to longest ago while the
// budget is exceeded. The caller holds ds's lock.
func (b *Backend) keepRecent(ds *docState, rows []*database.Change) {
	ds.recent.appended(rows)
	if !ds.recent.queued && len(ds.recent.changes) > 0 {
		ds.recent.queued = true
		b.windows.push(ds)
	}
	b.windows.trim()
}

func (wb *windowBudget) push(ds *docState) {
	wb.mu.Lock()
	wb.queue.Push(ds)
	wb.mu.Unlock()
}

// pop takes the document that entered the queue first, or nil.
func (wb *windowBudget) pop() *docState {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	ds, _ := wb.queue.Pop()
	return ds
}

// trim empties windows, oldest first, until the budget holds. A document
// whose lock is taken (the caller's own among them) is in use: it goes to
// the back of the queue, and each document is tried once per call, so trim
// never waits for a lock.
func (wb *windowBudget) trim() {
	wb.mu.Lock()
	tries := wb.queue.Len()
	wb.mu.Unlock()
	for ; tries > 0 && wb.held.Load() > wb.limit; tries-- {
		ds := wb.pop()
		if ds == nil {
			return
		}
		select {
		case ds.lock <- struct{}{}:
			ds.recent.reset()
			ds.recent.queued = false
			ds.unlock()
		default:
			wb.push(ds)
		}
	}
}

// span returns the changes from..to (server_seq, inclusive) when the window
// holds every one of them. The result is shared: read it only.
func (w *changeWindow) span(from, to int64) ([]*database.Change, bool) {
	n := len(w.changes)
	if n == 0 || from > to {
		return nil, false
	}
	first, last := w.changes[0].ServerSeq, w.changes[n-1].ServerSeq
	if from < first || to > last {
		return nil, false
	}
	return w.changes[from-first : to-first+1 : to-first+1], true
}
