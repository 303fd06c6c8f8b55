package backend

import (
	"context"
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// A document at a server_seq is its newest stored snapshot at or before it,
// brought forward through the change log. The owner's cache (buildDoc), the
// snapshotter (encodeState) and the operators' view (DocumentAt) all build
// documents this way, here. A stored snapshot that does not read is logged
// and passed over: the log is the truth, and the document is built from the
// start of it.

// rebuildBatch is how many stored changes a rebuild reads at a time, so a
// long log tail is never held in memory whole.
const rebuildBatch = 1000

// ErrNoSuchServerSeq: a server_seq beyond the document's head.
var ErrNoSuchServerSeq = errors.New("no such server_seq")

// DocumentAt builds the stored document as of server_seq seq (at most its
// head): a past state, which no owner keeps. It costs at most one snapshot
// interval of changes.
func (b *Backend) DocumentAt(ctx context.Context, info *database.DocInfo, seq int64) (*document.Document, error) {
	if seq < 0 || seq > info.ServerSeq {
		return nil, fmt.Errorf("document %s has no server_seq %d (head %d): %w", info.ID, seq, info.ServerSeq, ErrNoSuchServerSeq)
	}
	doc, _, err := b.docAt(ctx, info.ID, seq)
	return doc, err
}

// docAt builds document docID at server_seq seq from the newest stored
// snapshot at or before seq and the changes after it. It returns the
// server_seq of the snapshot it started from (0: none, or none that reads).
func (b *Backend) docAt(ctx context.Context, docID string, seq int64) (*document.Document, int64, error) {
	doc, from, err := b.storedBase(ctx, docID, seq)
	if err != nil {
		return nil, 0, err
	}
	if err := b.replay(ctx, docID, doc, from, seq); err != nil {
		return nil, 0, err
	}
	return doc, from, nil
}

// storedBase reads the newest stored snapshot at or before seq, with its
// server_seq: an empty document at 0 when there is none or it does not read.
func (b *Backend) storedBase(ctx context.Context, docID string, seq int64) (*document.Document, int64, error) {
	snap, err := b.db.FindSnapshot(ctx, docID, seq)
	switch {
	case err == nil:
		doc, derr := snapshotDoc(snap)
		if derr == nil {
			return doc, snap.ServerSeq, nil
		}
		b.logger.Error("stored snapshot does not read; rebuilding from the log",
			"document", docID, "server_seq", snap.ServerSeq, "error", derr)
	case !errors.Is(err, database.ErrSnapshotNotFound):
		return nil, 0, fmt.Errorf("document %s: find snapshot: %w", docID, err)
	}
	return document.New(), 0, nil
}

// snapshotDoc reads a stored snapshot with its version vector.
func snapshotDoc(s *database.Snapshot) (*document.Document, error) {
	vv, err := document.VersionVectorFromPB(&api.VersionVector{Vector: s.VersionVector})
	if err != nil {
		return nil, fmt.Errorf("snapshot vector: %w", err)
	}
	return document.FromSnapshotAt(s.Data, vv)
}

// replay applies the stored changes after from up to to. A stored change
// that does not apply means the stored document is broken, which is not the
// caller's fault: the error does not wrap the document's sentinels.
func (b *Backend) replay(ctx context.Context, docID string, doc *document.Document, from, to int64) error {
	for lo := from + 1; lo <= to; lo += rebuildBatch {
		hi := min(lo+rebuildBatch-1, to)
		stored, err := b.db.FindChanges(ctx, docID, lo, hi)
		if err != nil {
			return fmt.Errorf("document %s: find changes %d..%d: %w", docID, lo, hi, err)
		}
		bodies := make([]*api.Change, len(stored))
		for i, c := range stored {
			bodies[i] = c.Body
		}
		if err := doc.ApplyChanges(bodies); err != nil {
			return fmt.Errorf("document %s: changes %d..%d: %w: %s", docID, lo, hi, ErrDocumentBroken, err.Error())
		}
	}
	return nil
}
