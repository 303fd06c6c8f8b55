package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// TestCallWithoutProjectIsRefused: a backend call whose context names no
// project is refused with project.ErrMissing and changes nothing; it never
// acts on the default project, where the same calls succeed.
func TestCallWithoutProjectIsRefused(t *testing.T) {
	b, db := newBackend(t, nil)
	none := context.Background()
	a, _, docID := attachTwo(t, b)

	_, err := b.ActivateClient(none, "stranger", nil)
	assert.ErrorIs(t, err, project.ErrMissing, "activate")
	_, _, err = b.AttachDocument(none, 0, a, "other", pack(0, 0))
	assert.ErrorIs(t, err, project.ErrMissing, "attach")
	_, err = b.PushPull(none, 0, a, docID, pack(0, 0), false)
	assert.ErrorIs(t, err, project.ErrMissing, "pushpull")
	_, err = b.DocumentKey(none, docID)
	assert.ErrorIs(t, err, project.ErrMissing, "document key")
	_, err = b.DocumentSizeLimit(none)
	assert.ErrorIs(t, err, project.ErrMissing, "size limit")
	_, err = b.ListRevisions(none, a, docID, database.RevisionPaging{})
	assert.ErrorIs(t, err, project.ErrMissing, "list revisions")
	assert.ErrorIs(t, b.CheckClient(none, a), project.ErrMissing, "check client")
	assert.ErrorIs(t, b.DeactivateClient(none, a, nil), project.ErrMissing, "deactivate")

	// Nothing changed: no client "stranger", no document "other", and the
	// client is still active and attached.
	ctx := inDefault(context.Background())
	clients, err := db.FindInactiveClients(ctx, time.Now().Add(time.Hour), "", 10)
	require.NoError(t, err)
	assert.Len(t, clients, 2, "the clients attachTwo activated, no other")
	_, err = db.FindDocumentByKey(ctx, database.DefaultProjectID, "other")
	assert.ErrorIs(t, err, database.ErrDocumentNotFound)
	require.NoError(t, b.CheckClient(ctx, a))
	attached, err := b.AttachedDocuments(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, []string{docID}, attached)
	_, err = b.PushPull(ctx, 0, a, docID, pack(0, 0), false)
	assert.NoError(t, err)
}
