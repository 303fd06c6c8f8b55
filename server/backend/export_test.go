package backend

// SetBeforeEncode makes the backend's snapshot runs call fn before they
// encode, so a test can hold a run there.
func SetBeforeEncode(b *Backend, fn func(docID string, seq int64)) { b.beforeEncode = fn }

// SetEncodeUnderLock makes the backend encode snapshots under the document's
// lock, as before the snapshotter: the baseline of its benchmark.
func SetEncodeUnderLock(b *Backend, on bool) { b.encodeUnderLock = on }
