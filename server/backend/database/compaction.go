package database

import "context"

// Compaction replaces a document's history with one change that builds its
// content, as upstream's compaction does. The log keeps its server_seq
// values growing: the compacted change is stored after the head, and the
// changes and snapshots before it are removed, so the unique (document,
// server_seq) key goes on arbitrating writers.
type Compaction interface {
	// CompactDocument stores c, whose ServerSeq must be the head + 1, as
	// the only change of the document's log, removes its snapshots, sets
	// CompactedSeq to c.ServerSeq and raises DocEpoch from docEpoch by one.
	// ErrFenced as AppendChanges; ErrConflict (nothing changed) when the
	// head is not c.ServerSeq - 1 or the document's DocEpoch is not
	// docEpoch. Once it returns nil no reader sees the old history; a crash
	// before leaves the document as it was, or compacted once the next
	// ClaimDocument has finished the work.
	CompactDocument(ctx context.Context, docID string, epoch, docEpoch int64, c *Change) (*DocInfo, error)
	// FindCompactionCandidates returns, in ID order, up to limit live
	// documents with an ID above afterID ("" for the first) whose log holds
	// at least minChanges changes, and the ID to go on after (the last one
	// looked at, "" when the scan reached the end).
	FindCompactionCandidates(ctx context.Context, minChanges int64, afterID string, limit int) ([]*DocInfo, string, error)
}

// LogLen is how many changes the document's log holds.
func (d *DocInfo) LogLen() int64 {
	if d.CompactedSeq == 0 {
		return d.ServerSeq
	}
	return d.ServerSeq - d.CompactedSeq + 1
}
