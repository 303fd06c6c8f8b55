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

// TestWarmCopyIsBroughtForwardOnHandoff: a successor builds a document
// while its owner still writes (epoch 0); the owner goes on writing; the
// successor's first call with the new epoch serves every acknowledged
// change without building the document again, and the old owner's next
// write is fenced.
func TestWarmCopyIsBroughtForwardOnHandoff(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	owner, _ := newBackend(t, db)
	next, _ := newBackend(t, db)
	a := newWriter(t, owner, "a")
	a.attach("doc")
	for i := range 5 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}

	seq, err := next.WarmDocument(ctx, defaultProject, a.docID)
	require.NoError(t, err)
	require.EqualValues(t, 5, seq)
	require.EqualValues(t, 1, next.Metrics().DocumentsBuilt.Load())
	require.EqualValues(t, 1, next.Metrics().DocumentsWarmed.Load())

	// The owner still owns it: its writes land after the warm copy.
	for i := range 3 {
		a.mustPush(a.set(fmt.Sprintf("late%d", i), fmt.Sprint(i)))
	}
	s, err := next.DocumentSummary(ctx, defaultProject, 1, a.docID, true, false)
	require.NoError(t, err)
	require.EqualValues(t, 8, s.ServerSeq)
	assert.Equal(t, replayJSON(t, db, a.docID, 8), s.Root)
	assert.EqualValues(t, 1, next.Metrics().DocumentsBuilt.Load(), "the successor built the document again")

	_, err = a.push(a.set("after", "handoff"))
	require.ErrorIs(t, err, database.ErrFenced, "the old owner wrote after the new epoch claimed the document")
}

// TestWarmCopyBeforeACompactionIsDropped: a compaction by the owner after
// the successor built its copy rewrites the log the copy would be brought
// forward through: the successor builds the document afresh.
func TestWarmCopyBeforeACompactionIsDropped(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	owner, _ := newBackend(t, db)
	next, _ := newBackend(t, db)
	a := newWriter(t, owner, "a")
	a.attach("doc")
	for i := range 4 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	_, err := next.WarmDocument(ctx, defaultProject, a.docID)
	require.NoError(t, err)
	done, err := owner.CompactDocument(ctx, defaultProject, 0, a.docID, true)
	require.NoError(t, err)
	require.True(t, done)

	s, err := next.DocumentSummary(ctx, defaultProject, 1, a.docID, true, false)
	require.NoError(t, err)
	assert.Equal(t, replayJSON(t, db, a.docID, s.ServerSeq), s.Root)
	assert.EqualValues(t, 2, next.Metrics().DocumentsBuilt.Load(), "the copy from before the compaction was served")
}

// TestWarmDocumentRefusals: an unknown document, a removed one and a closed
// backend are refused and leave nothing built.
func TestWarmDocumentRefusals(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	_, err := b.WarmDocument(ctx, defaultProject, "000000000000000000000000")
	require.ErrorIs(t, err, database.ErrDocumentNotFound)

	a := newWriter(t, b, "a")
	a.attach("doc")
	_, err = b.RemoveDocument(ctx, defaultProject, 0, a.id, a.docID, pack(0, 0))
	require.NoError(t, err)
	_, err = b.WarmDocument(ctx, defaultProject, a.docID)
	require.ErrorIs(t, err, backend.ErrDocumentRemoved)
	require.Zero(t, b.Metrics().DocumentsWarmed.Load())
}
