package dbtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testCompaction checks CompactDocument and FindCompactionCandidates.
func testCompaction(t *testing.T, newDB NewDB) {
	t.Run("ReplacesTheLogAndSnapshots", func(t *testing.T) {
		ctx := testCtx(t)
		db := newDB(t)
		d := docWithLog(t, ctx, db, 30)
		require.NoError(t, db.SaveSnapshot(ctx, d.ID, 0, snapshotAt(20, "old")))
		actor := unknownID()
		c := batch(actor, 31, 1, 1, "compacted")[0]
		info, err := db.CompactDocument(ctx, d.ID, 0, 0, c)
		require.NoError(t, err)
		require.Equal(t, int64(1), info.DocEpoch)
		require.Equal(t, int64(31), info.CompactedSeq)
		require.Equal(t, int64(31), info.ServerSeq)
		require.Equal(t, int64(1), info.LogLen())

		log := allChanges(t, ctx, db, d.ID)
		require.Len(t, log, 1)
		require.Equal(t, int64(31), log[0].ServerSeq)
		require.Equal(t, "compacted#0/1", log[0].Body.GetMessage())
		wantNoSnapshot(t, db, ctx, d.ID, 1<<62)

		claimed := must(db.ClaimDocument(ctx, d.ID, 0)).get(t)
		require.Equal(t, int64(31), claimed.ServerSeq)
		require.Equal(t, int64(1), claimed.DocEpoch)
		found := must(db.FindDocument(ctx, database.DefaultProjectID, d.ID)).get(t)
		require.Equal(t, int64(1), found.DocEpoch)

		// The log goes on after the compacted change; a snapshot before
		// it is refused.
		require.NoError(t, db.AppendChanges(ctx, d.ID, 0, batch(actor, 32, 2, 2, "after")))
		require.Len(t, allChanges(t, ctx, db, d.ID), 3)
		require.Error(t, db.SaveSnapshot(ctx, d.ID, 0, snapshotAt(30, "stale")))
		require.NoError(t, db.SaveSnapshot(ctx, d.ID, 0, snapshotAt(32, "new")))
		require.Equal(t, uint32(3), must(db.LastClientSeq(ctx, d.ID, actor, 30)).get(t))
	})

	t.Run("RefusesAMovedHeadOrEpoch", func(t *testing.T) {
		ctx := testCtx(t)
		db := newDB(t)
		d := docWithLog(t, ctx, db, 5)
		actor := unknownID()
		_, err := db.CompactDocument(ctx, d.ID, 0, 0, batch(actor, 5, 1, 1, "x")[0])
		require.ErrorIs(t, err, database.ErrConflict)
		_, err = db.CompactDocument(ctx, d.ID, 0, 3, batch(actor, 6, 1, 1, "x")[0])
		require.ErrorIs(t, err, database.ErrConflict)
		require.Len(t, allChanges(t, ctx, db, d.ID), 5)
		_, err = db.CompactDocument(ctx, unknownID(), 0, 0, batch(actor, 1, 1, 1, "x")[0])
		require.ErrorIs(t, err, database.ErrDocumentNotFound)
	})

	t.Run("Fenced", func(t *testing.T) {
		ctx := testCtx(t)
		db := newDB(t)
		d := docWithLog(t, ctx, db, 3)
		must(db.ClaimDocument(ctx, d.ID, 5)).get(t)
		_, err := db.CompactDocument(ctx, d.ID, 4, 0, batch(unknownID(), 4, 1, 1, "x")[0])
		require.ErrorIs(t, err, database.ErrFenced)
		require.Len(t, allChanges(t, ctx, db, d.ID), 3)
		info := must(db.ClaimDocument(ctx, d.ID, 5)).get(t)
		require.Equal(t, int64(3), info.ServerSeq)
		require.Zero(t, info.DocEpoch)
	})

	t.Run("AttachmentsKeepTheirEpoch", func(t *testing.T) {
		ctx := testCtx(t)
		db := newDB(t)
		d := newDoc(t, ctx, db)
		a := &database.Attachment{ClientID: unknownID(), DocID: d.ID, Status: database.Attached, DocEpoch: 3}
		require.NoError(t, db.UpdateAttachment(ctx, a, 0))
		got := must(db.FindAttachment(ctx, a.ClientID, d.ID)).get(t)
		require.Equal(t, int64(3), got.DocEpoch)
	})

	t.Run("Candidates", func(t *testing.T) {
		ctx := testCtx(t)
		db := newDB(t)
		long := docWithLog(t, ctx, db, 12)
		short := docWithLog(t, ctx, db, 3)
		seen := map[string]bool{}
		after := ""
		for range 100 {
			found, next, err := db.FindCompactionCandidates(ctx, 10, after, 1)
			require.NoError(t, err)
			for _, f := range found {
				seen[f.ID] = true
			}
			if next == "" {
				break
			}
			after = next
		}
		require.True(t, seen[long.ID])
		require.False(t, seen[short.ID])

		_, err := db.CompactDocument(ctx, long.ID, 0, 0, batch(unknownID(), 13, 1, 1, "c")[0])
		require.NoError(t, err)
		found, _, err := db.FindCompactionCandidates(ctx, 10, "", 1000)
		require.NoError(t, err)
		for _, f := range found {
			require.NotEqual(t, long.ID, f.ID, "a compacted document is no candidate")
		}
	})
}
