package migrate_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/migrate"
	"github.com/yorkie-affinity/yorkie/test/testenv"
	"github.com/yorkie-affinity/yorkie/test/upstreamgen"
)

// generatedEnv is a source generated in upstream's layout and an importer
// of it into a fresh target.
func generatedEnv(tb testing.TB, cfg upstreamgen.Config) (*upstreamgen.Source, *migrate.Importer, *mongo.DB, context.Context) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	tb.Cleanup(cancel)
	m := testenv.MongoURI(tb)
	src, dst := m.NewDatabase(), m.NewDatabase()
	m.DropWhenDone(tb, src)
	m.DropWhenDone(tb, dst)
	target, err := mongo.Dial(ctx, mongo.Config{URI: m.URI, Database: dst})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = target.Close(context.Background()) })
	raw, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = raw.Disconnect(context.Background()) })
	g, err := upstreamgen.Generate(ctx, raw.Database(src), cfg)
	require.NoError(tb, err)
	im, err := migrate.Open(ctx, migrate.Config{SourceURI: m.URI, SourceDatabase: src, Target: target})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = im.Close(context.Background()) })
	return g, im, target, ctx
}

// A second run copies only what changed upstream since the first: the new
// changes of the one document written to, and its client's checkpoint.
func TestCatchUpCopiesOnlyWhatChanged(t *testing.T) {
	g, im, target, ctx := generatedEnv(t, upstreamgen.Config{Documents: 3, ChangesPerDocument: 50})
	rep, err := im.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 150, rep.ChangesCopied)

	require.NoError(t, g.Append(ctx, 1, 20))
	rep, err = im.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rep.DocumentsUnchanged)
	require.EqualValues(t, 20, rep.ChangesCopied)
	require.Equal(t, map[string]int{"changes": 20, "documents": 1, "clients": 1, "attachments": 1}, rep.Written)

	docID := g.Docs[1].ID.Hex()
	info, err := target.FindDocument(ctx, database.DefaultProjectID, docID)
	require.NoError(t, err)
	require.EqualValues(t, 70, info.ServerSeq)
	a, err := target.FindAttachment(ctx, g.Docs[1].Actor.Hex(), docID)
	require.NoError(t, err)
	require.EqualValues(t, 70, a.ServerSeq)
	require.EqualValues(t, 70, a.ClientSeq)

	v, err := im.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, v.Differences)
}

// BenchmarkImportUpstream imports a database generated in upstream's
// layout (YORKIE_MIGRATE_BENCH_DOCS documents of YORKIE_MIGRATE_BENCH_CHANGES
// changes each; small by default), then a catch-up after
// YORKIE_MIGRATE_BENCH_CATCHUP more changes, and reports the import's
// changes per second, the peak Go heap and the catch-up's time.
func BenchmarkImportUpstream(b *testing.B) {
	docs, perDoc, more := envInt("YORKIE_MIGRATE_BENCH_DOCS", 10), envInt("YORKIE_MIGRATE_BENCH_CHANGES", 20), envInt("YORKIE_MIGRATE_BENCH_CATCHUP", 10)
	for range b.N {
		b.StopTimer()
		g, im, _, ctx := generatedEnv(b, upstreamgen.Config{
			Documents: docs, ChangesPerDocument: perDoc, PresenceEvery: 10, SnapshotInterval: 40,
		})
		runtime.GC()
		peak := watchHeap()
		b.StartTimer()
		start := time.Now()
		rep, err := im.Run(ctx)
		elapsed := time.Since(start)
		b.StopTimer()
		require.NoError(b, err)
		b.ReportMetric(float64(rep.ChangesCopied)/elapsed.Seconds(), "changes/s")
		b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")

		for i := range more {
			require.NoError(b, g.Append(ctx, i%docs, 1))
		}
		start = time.Now()
		rep, err = im.Run(ctx)
		require.NoError(b, err)
		require.EqualValues(b, more, rep.ChangesCopied+rep.Placeholders)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "catchup-ms")
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// watchHeap samples the Go heap until the returned function is called,
// which returns the highest sample.
func watchHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// A document this server wrote to after the import is not overwritten by
// a later run when upstream wrote to it too: the run reports it diverged
// and imports the rest.
func TestCatchUpRefusesADocumentThatDiverged(t *testing.T) {
	g, im, target, ctx := generatedEnv(t, upstreamgen.Config{Documents: 2, ChangesPerDocument: 10})
	_, err := im.Run(ctx)
	require.NoError(t, err)

	docID := g.Docs[0].ID.Hex()
	require.NoError(t, target.AppendChanges(ctx, docID, 0, []*database.Change{{
		ServerSeq: 11, ActorID: g.Docs[0].Actor.Hex(), ClientSeq: 11,
		Body: &api.Change{Id: &api.ChangeID{ServerSeq: 11, ClientSeq: 11, ActorId: g.Docs[0].Actor[:], VersionVector: &api.VersionVector{}}},
	}}))
	require.NoError(t, g.Append(ctx, 0, 3))
	require.NoError(t, g.Append(ctx, 1, 3))

	rep, err := im.Run(ctx)
	require.ErrorIs(t, err, mongo.ErrImportDiverged)
	require.Contains(t, err.Error(), docID)
	require.EqualValues(t, 3, rep.ChangesCopied, "the other document catches up")
	info, err := target.FindDocument(ctx, database.DefaultProjectID, docID)
	require.NoError(t, err)
	require.EqualValues(t, 11, info.ServerSeq, "this server's change stays")
}

// A source that returns a document's changes out of server_seq order (not
// upstream's insertion order) still imports it whole: the pass leaves that
// document, and it is read again by itself, sorted.
func TestImportsChangesStoredOutOfOrder(t *testing.T) {
	g, im, target, ctx := generatedEnv(t, upstreamgen.Config{Documents: 3, ChangesPerDocument: 30})
	changes := g.DB.Collection("changes")
	cur, err := changes.Find(ctx, bson.D{{Key: "doc_id", Value: g.Docs[1].ID}})
	require.NoError(t, err)
	var rows []bson.D
	require.NoError(t, cur.All(ctx, &rows))
	require.Len(t, rows, 30)
	_, err = changes.DeleteMany(ctx, bson.D{{Key: "doc_id", Value: g.Docs[1].ID}})
	require.NoError(t, err)
	reversed := make([]any, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		reversed = append(reversed, rows[i])
	}
	_, err = changes.InsertMany(ctx, reversed)
	require.NoError(t, err)

	rep, err := im.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 90, rep.ChangesCopied)
	require.Zero(t, rep.Placeholders)
	got, err := target.FindChanges(ctx, g.Docs[1].ID.Hex(), 1, 30)
	require.NoError(t, err)
	require.Len(t, got, 30)
	for i, c := range got {
		require.EqualValues(t, i+1, c.ServerSeq)
		require.EqualValues(t, i+1, c.ClientSeq)
	}
	v, err := im.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, v.Differences)
}

// A generated source with presence-only changes (numbered, not stored)
// and snapshots imports whole: every server_seq is in the log, the newest
// snapshot of each comes along, and every document rebuilt here equals upstream's
// newest snapshot of it.
func TestImportsGeneratedHistoryWithSnapshots(t *testing.T) {
	_, im, target, ctx := generatedEnv(t, upstreamgen.Config{
		Documents: 4, ChangesPerDocument: 45, PresenceEvery: 10, SnapshotInterval: 20, Round: 5,
	})
	rep, err := im.Run(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4*41, rep.ChangesCopied)
	require.EqualValues(t, 4*4, rep.Placeholders)
	require.Equal(t, 4, rep.Written["snapshots"], "the newest of each document")
	docs, err := target.ImportMarks(ctx)
	require.NoError(t, err)
	require.Len(t, docs, 4)

	v, err := im.Verify(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, v.Compared)
	require.Empty(t, v.Differences)
}
