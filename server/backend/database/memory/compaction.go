package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// CompactDocument replaces the document's log with c and drops its
// snapshots, at once.
func (db *DB) CompactDocument(ctx context.Context, docID string, epoch, docEpoch int64, c *database.Change) (*database.DocInfo, error) {
	if err := db.check(ctx, "compact document"); err != nil {
		return nil, err
	}
	if c == nil || c.Body == nil {
		return nil, errors.New("compact document: no change")
	}
	buf, lens, err := encodeChanges([]*database.Change{c})
	if err != nil {
		return nil, fmt.Errorf("compact document %q: %w", docID, err)
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("compact document: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fenced(epoch); err != nil {
		return nil, fmt.Errorf("compact document: %w", err)
	}
	if head := d.head(); c.ServerSeq != head+1 || d.info.DocEpoch != docEpoch {
		return nil, fmt.Errorf("compact document %q at %d (epoch %d): head is %d (epoch %d): %w",
			docID, c.ServerSeq, docEpoch, head, d.info.DocEpoch, database.ErrConflict)
	}
	d.log.reset(c.ServerSeq-1, buf, lens)
	db.recent.forget(d)
	d.info.ServerSeq = c.ServerSeq
	d.info.CompactedSeq = c.ServerSeq
	d.info.DocEpoch = docEpoch + 1
	db.snaps.mu.Lock()
	delete(db.snaps.byDoc, docID)
	db.snaps.mu.Unlock()
	info := d.info
	return &info, nil
}

// FindCompactionCandidates scans every document: the memory database serves
// one node, and the scan runs once per housekeeping interval.
func (db *DB) FindCompactionCandidates(ctx context.Context, minChanges int64, afterID string, limit int) ([]*database.DocInfo, string, error) {
	if err := db.check(ctx, "find compaction candidates"); err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		return nil, afterID, nil
	}
	db.mu.RLock()
	var out []*database.DocInfo
	for id, d := range db.docs {
		if id <= afterID {
			continue
		}
		if info := d.snapshot(); info.RemovedAt.IsZero() && info.LogLen() >= minChanges {
			out = append(out, info)
		}
	}
	db.mu.RUnlock()
	slices.SortFunc(out, func(a, b *database.DocInfo) int { return strings.Compare(a.ID, b.ID) })
	if len(out) <= limit {
		return out, "", nil
	}
	out = out[:limit]
	return out, out[len(out)-1].ID, nil
}
