package housekeeping

import (
	"context"
	"errors"
	"fmt"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// DefaultCompactionMinChanges is how many changes a document's log must
// hold for housekeeping to compact it, as upstream's
// --housekeeping-compaction-min-changes.
const DefaultCompactionMinChanges = 1000

// ErrSkipCompaction is what Compaction.Compact returns for a document it
// leaves alone (a client has it attached): no failure.
var ErrSkipCompaction = errors.New("compaction skipped")

// Compaction is the housekeeping task that compacts long documents no
// client has attached, as upstream's.
type Compaction struct {
	// MinChanges is the least a log must hold (DefaultCompactionMinChanges
	// when zero).
	MinChanges int
	// Documents finds the candidates. Required.
	Documents interface {
		FindCompactionCandidates(ctx context.Context, minChanges int64, afterID string, limit int) ([]*database.DocInfo, string, error)
	}
	// Compact compacts one document at its owner, refusing it with an
	// error wrapping ErrSkipCompaction when a client has it attached, and
	// reports whether it compacted. Required.
	Compact func(ctx context.Context, d *database.DocInfo) (bool, error)
}

// compact runs one round of the compaction task: up to the candidates
// limit, from where the previous round stopped. The caller holds runMu and
// the role.
func (h *Housekeeper) compact(ctx context.Context, r *Report) []error {
	c := h.cfg.Compaction
	if c == nil {
		return nil
	}
	found, next, err := c.Documents.FindCompactionCandidates(ctx, int64(c.MinChanges), h.docCursor, h.cfg.CandidatesLimit)
	if err != nil {
		return []error{fmt.Errorf("housekeeping: find compaction candidates: %w", err)}
	}
	h.docCursor = next
	var errs []error
	for _, d := range found {
		compacted, err := c.Compact(ctx, d)
		switch {
		case errors.Is(err, ErrSkipCompaction):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("housekeeping: compact %s: %w", d.ID, err))
			if ctx.Err() != nil {
				return errs
			}
			continue
		}
		if compacted {
			r.Compacted++
			h.log.Info("compacted document", "document", d.ID, "key", d.Key, "changes", d.LogLen())
		}
	}
	return errs
}
