package backend

// SetBeforeEncode makes the backend's snapshot runs call fn before they
// encode, so a test can hold a run there.
func SetBeforeEncode(b *Backend, fn func(docID string, seq int64)) { b.beforeEncode = fn }

// SetEncodeUnderLock makes the backend encode snapshots under the document's
// lock, as before the snapshotter: the baseline of its benchmark.
func SetEncodeUnderLock(b *Backend, on bool) { b.encodeUnderLock = on }

// SetBeforeAnswer makes the backend call fn before it encodes a snapshot
// answer off the document's lock, so a test can hold it there.
func SetBeforeAnswer(b *Backend, fn func(docID string, seq int64)) { b.beforeAnswer = fn }

// SetAnswerUnderLock makes the backend encode snapshot answers under the
// document's lock: the baseline of their benchmark.
func SetAnswerUnderLock(b *Backend, on bool) { b.answerUnderLock = on }
