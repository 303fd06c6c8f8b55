package backend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// TestCompactDocument: an attached document is refused unless forced and
// nothing changes; a forced compaction keeps the content, replaces the log
// with one change, and the client attached before gets ErrEpochMismatch
// while a new one attaches the compacted document and edits on.
func TestCompactDocument(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 30 {
		a.mustPush(a.set(fmt.Sprint("k", i%7), strings.Repeat("v", i)))
	}
	before := replayJSON(t, db, a.docID, 1<<62)

	_, err := b.CompactDocument(ctx, defaultProject, 0, a.docID, false)
	require.ErrorIs(t, err, backend.ErrDocumentAttached)
	require.Len(t, storedLog(t, db, a.docID), 30)

	compacted, err := b.CompactDocument(ctx, defaultProject, 0, a.docID, true)
	require.NoError(t, err)
	require.True(t, compacted)
	log := storedLog(t, db, a.docID)
	require.Len(t, log, 1)
	require.Equal(t, int64(31), log[0].ServerSeq)
	require.Equal(t, before, replayJSON(t, db, a.docID, 1<<62))
	info, err := db.FindDocument(ctx, database.DefaultProjectID, a.docID)
	require.NoError(t, err)
	require.Equal(t, int64(1), info.DocEpoch)

	_, err = a.push(a.set("late", "x"))
	require.ErrorIs(t, err, backend.ErrEpochMismatch)
	require.Len(t, storedLog(t, db, a.docID), 1, "nothing of the stale client is stored")
	_, err = b.DetachDocument(ctx, defaultProject, 0, a.id, a.docID, pack(a.server, a.seq))
	require.NoError(t, err, "a stale client may leave")

	c := newWriter(t, b, "c")
	resp := c.attach("doc")
	require.Len(t, resp.GetChanges(), 1)
	c.mustPush(c.set("after", "y"))
	var want, got map[string]any
	require.NoError(t, json.Unmarshal([]byte(before), &want))
	require.NoError(t, json.Unmarshal([]byte(replayJSON(t, db, a.docID, 1<<62)), &got))
	require.Equal(t, "y", got["after"])
	delete(got, "after")
	require.Equal(t, want, got)

	again, err := b.CompactDocument(ctx, defaultProject, 0, a.docID, false)
	require.ErrorIs(t, err, backend.ErrDocumentAttached)
	require.False(t, again)
}

// BenchmarkCompactDocument compacts a document of
// YORKIE_BENCH_COMPACT_CHANGES changes (default 10000; 100000 for the
// figure in the README), each setting one of 100 keys, and reports the
// stored bytes of its log before and after.
func BenchmarkCompactDocument(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("YORKIE_BENCH_COMPACT_CHANGES")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		be, db := newBackend(b, nil)
		w := newWriter(b, be, "w")
		w.attach(fmt.Sprint("doc-", i))
		for done := 0; done < n; {
			batch := make([]*api.Change, 0, min(1000, n-done))
			for range cap(batch) {
				batch = append(batch, w.set(fmt.Sprint("k", done%100), fmt.Sprint("value-", done)))
				done++
			}
			w.mustPush(batch...)
		}
		bytesBefore := logBytes(b, db, w.docID)
		b.StartTimer()
		if _, err := be.CompactDocument(ctx, defaultProject, 0, w.docID, true); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(bytesBefore), "bytes-before")
		b.ReportMetric(float64(logBytes(b, db, w.docID)), "bytes-after")
		b.ReportMetric(float64(n), "changes")
	}
}

// logBytes is the encoded size of the document's stored log.
func logBytes(tb testing.TB, db database.Database, docID string) int {
	total := 0
	for _, c := range storedLog(tb, db, docID) {
		total += proto.Size(c.Body)
	}
	return total
}
