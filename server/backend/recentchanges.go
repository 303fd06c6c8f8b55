package backend

import "github.com/yorkie-affinity/yorkie/server/backend/database"

// recentWindow is how many of a document's newest changes its owner keeps as
// it stored them, once it has that many; it keeps at most twice as many.
// Every watcher pulls right after each push, so a pull normally asks for the
// last few changes only.
const recentWindow = 128

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
}

// appended records rows, just appended to the log, as the newest changes.
// Rows that do not follow the window start it again.
func (w *changeWindow) appended(rows []*database.Change) {
	if len(rows) == 0 {
		return
	}
	if n := len(w.changes); n > 0 && w.changes[n-1].ServerSeq+1 != rows[0].ServerSeq {
		w.changes = nil
	}
	w.changes = append(w.changes, rows...)
	if n := len(w.changes); n > 2*recentWindow {
		// A fresh slice, so that the dropped changes are not kept alive by
		// the backing array.
		w.changes = append([]*database.Change(nil), w.changes[n-recentWindow:]...)
	}
}

// reset empties the window.
func (w *changeWindow) reset() { w.changes = nil }

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
