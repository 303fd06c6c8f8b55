package housekeeping_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
)

// TestCompactionTask: each run compacts the documents whose log holds at
// least the minimum, goes on where the last run stopped, skips the ones a
// client has attached without failing, and reports the others' failures.
func TestCompactionTask(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	var long []string
	for i := range 5 {
		d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprint("doc-", i))
		require.NoError(t, err)
		n := 3
		if i%2 == 0 {
			n = 12
			long = append(long, d.ID)
		}
		batch := make([]*database.Change, n)
		for j := range batch {
			batch[j] = &database.Change{ServerSeq: int64(j + 1), ActorID: "a", ClientSeq: uint32(j + 1), Body: &api.Change{}}
		}
		require.NoError(t, db.AppendChanges(ctx, d.ID, 0, batch))
	}
	attached := long[1]
	var compacted []string
	h, err := housekeeping.New(housekeeping.Config{
		Interval:        time.Hour,
		CandidatesLimit: 2,
		DB:              db,
		Tracker:         housekeeping.NewTracker(),
		Deactivate:      func(context.Context, *database.ClientInfo) error { return nil },
		Compaction: &housekeeping.Compaction{
			MinChanges: 10,
			Documents:  db,
			Compact: func(_ context.Context, d *database.DocInfo) (bool, error) {
				if d.ID == attached {
					return false, fmt.Errorf("attached: %w", housekeeping.ErrSkipCompaction)
				}
				compacted = append(compacted, d.ID)
				return true, nil
			},
		},
	})
	require.NoError(t, err)
	total := 0
	for range 4 {
		r := h.RunOnce(ctx)
		require.NoError(t, r.Err)
		total += r.Compacted
	}
	require.ElementsMatch(t, []string{long[0], long[2]}, compacted[:2])
	require.GreaterOrEqual(t, total, 2)
	require.NotContains(t, compacted, attached)

	_, err = housekeeping.New(housekeeping.Config{
		DB: db, Tracker: housekeeping.NewTracker(),
		Deactivate: func(context.Context, *database.ClientInfo) error { return nil },
		Compaction: &housekeeping.Compaction{MinChanges: 10},
	})
	require.Error(t, err, "a compaction task needs its dependencies")
}
