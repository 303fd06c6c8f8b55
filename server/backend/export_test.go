package backend

// SetBeforeEncode makes the backend's snapshot runs call fn before they
// encode, so a test can hold a run there.
func SetBeforeEncode(b *Backend, fn func(docID string, seq int64)) { b.beforeEncode = fn }

// SetBeforeAnswer makes the backend call fn before it encodes a snapshot
// answer off the document's lock, so a test can hold it there.
func SetBeforeAnswer(b *Backend, fn func(docID string, seq int64)) { b.beforeAnswer = fn }

// AttachmentWritesWaited returns how many calls wait for attachment writes
// left for after a document's lock.
func AttachmentWritesWaited(b *Backend) int { return int(b.attWrites.waiting.Load()) }

// DropRecentChanges empties the document's window of the newest changes, so
// that its next pull reads them from the database.
func DropRecentChanges(b *Backend, docID string) {
	b.mu.RLock()
	ds := b.docs[docID]
	b.mu.RUnlock()
	if ds == nil {
		return
	}
	ds.lock <- struct{}{}
	ds.recent.reset()
	ds.unlock()
}
