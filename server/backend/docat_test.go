package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// TestUnreadableSnapshotIsPassedOverEverywhere: a stored snapshot that does
// not read is passed over the same way by everything that builds a document
// at a server_seq: the operators' view of a past state, a node building the
// document to serve it, and that node's next snapshot, which then holds
// what the log holds.
func TestUnreadableSnapshotIsPassedOverEverywhere(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	off := backend.Config{DB: db, SnapshotInterval: -1, SnapshotThreshold: -1}
	b, _ := configuredBackend(t, off)
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 12 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i%5), fmt.Sprint(i)))
	}
	require.NoError(t, b.Close(ctx))
	require.NoError(t, db.SaveSnapshot(ctx, a.docID, 0, &database.Snapshot{ServerSeq: 10, Data: []byte("not a snapshot")}))

	// The operators' view, before and after the broken snapshot.
	view, _ := configuredBackend(t, off)
	info, err := db.FindDocumentByKey(ctx, database.DefaultProjectID, "doc")
	require.NoError(t, err)
	for _, seq := range []int64{9, 10, 12} {
		doc, err := view.DocumentAt(ctx, info, seq)
		require.NoError(t, err, "server_seq %d", seq)
		assert.Equal(t, replayJSON(t, db, a.docID, seq), doc.JSON(), "server_seq %d", seq)
	}

	// A node building the document to serve it, and its next snapshot.
	owner, _ := configuredBackend(t, backend.Config{DB: db, SnapshotInterval: 15, SnapshotThreshold: 1})
	late := newWriter(t, owner, "late")
	resp := late.attach("doc")
	assert.Equal(t, replayJSON(t, db, a.docID, 12), snapshotJSON(t, resp.GetSnapshot()))
	assert.EqualValues(t, 1, owner.Metrics().DocumentsBuilt.Load())
	for i := range 3 {
		late.mustPush(late.set(fmt.Sprintf("late%d", i), fmt.Sprint(i)))
	}
	require.NoError(t, owner.Close(ctx))
	assert.Zero(t, owner.Metrics().SnapshotFailures.Load())
	snap, err := db.FindSnapshot(ctx, a.docID, 1<<62)
	require.NoError(t, err)
	require.EqualValues(t, 15, snap.ServerSeq)
	assert.Equal(t, replayJSON(t, db, a.docID, 15), snapshotJSON(t, snap.Data))
}
