package backend_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// readCountingDB counts the change log reads.
type readCountingDB struct {
	database.Database
	reads atomic.Int64
}

func (d *readCountingDB) FindChanges(ctx context.Context, docID string, from, to int64) ([]*database.Change, error) {
	d.reads.Add(1)
	return d.Database.FindChanges(ctx, docID, from, to)
}

// pullBoth has c pull with the owner's window of recent changes and then d,
// at the same checkpoint, pull with the window emptied (so from the
// database); it requires the same changes, c's read without a database read
// when fromWindow, and returns them.
func pullBoth(t *testing.T, b *backend.Backend, db *readCountingDB, c, d *writer, fromWindow bool) []*api.Change {
	t.Helper()
	require.Equal(t, c.server, d.server, "both pull from the same checkpoint")
	reads, hits := db.reads.Load(), b.Metrics().PullsFromWindow.Load()
	got := c.mustPush().GetChanges()
	if fromWindow {
		require.Equal(t, reads, db.reads.Load(), "the pull read nothing from the database")
		require.Equal(t, hits+1, b.Metrics().PullsFromWindow.Load())
	}
	backend.DropRecentChanges(b, d.docID)
	reads = db.reads.Load()
	want := d.mustPush().GetChanges()
	require.Greater(t, db.reads.Load(), reads, "without the window the pull reads the database")
	require.NotEmpty(t, want)
	require.Len(t, got, len(want))
	for i := range want {
		require.True(t, proto.Equal(want[i], got[i]), "change %d: window %v, database %v", i, got[i], want[i])
	}
	return got
}

// TestPullAfterPushIsServedFromTheWindow: the pulls that follow a push get
// from the owner's window the changes the database gives, with no read of
// the log; after a compaction and after the document was released (and
// written by another node meanwhile) they still get what the database holds.
func TestPullAfterPushIsServedFromTheWindow(t *testing.T) {
	for _, dc := range databases() {
		t.Run(dc.name, func(t *testing.T) {
			ctx := context.Background()
			db := &readCountingDB{Database: dc.open(t)}
			b, _ := newBackend(t, db)
			a, c, d := newWriter(t, b, "a"), newWriter(t, b, "c"), newWriter(t, b, "d")
			for _, w := range []*writer{a, c, d} {
				w.attach("doc")
			}

			a.mustPush(a.set("k1", "v1"), a.set("k2", "v2"), a.set("k3", "v3"))
			require.Len(t, pullBoth(t, b, db, c, d, true), 3)
			a.mustPush(a.set("k4", "v4"))
			require.Len(t, pullBoth(t, b, db, c, d, true), 1)

			// Released (a handoff) and written by another node: the pulls
			// after taking it back get that node's change.
			require.NoError(t, b.ReleaseDocument(ctx, a.docID, nil))
			other, _ := newBackend(t, db)
			a.b = other
			a.mustPush(a.set("k5", "elsewhere"))
			require.NoError(t, other.ReleaseDocument(ctx, a.docID, nil))
			a.b = b
			require.Len(t, pullBoth(t, b, db, c, d, false), 1)
			a.mustPush(a.set("k6", "v6"))
			require.Len(t, pullBoth(t, b, db, c, d, true), 1)

			// Across a compaction: the clients attached before it are
			// stale; new ones pull the compacted history, then the window
			// again.
			compacted, err := b.CompactDocument(ctx, defaultProject, 0, a.docID, true)
			require.NoError(t, err)
			require.True(t, compacted)
			f, g, h := newWriter(t, b, "f"), newWriter(t, b, "g"), newWriter(t, b, "h")
			for _, w := range []*writer{f, g, h} {
				require.Len(t, w.attach("doc").GetChanges(), 1, "the compacted change")
			}
			f.mustPush(f.set("k7", "after"), f.set("k8", "after"))
			require.Len(t, pullBoth(t, b, db, g, h, true), 2)
			_, err = c.push()
			require.ErrorIs(t, err, backend.ErrEpochMismatch)
		})
	}
}
