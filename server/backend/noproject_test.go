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

// TestCallWithoutProjectIsRefused: a backend call that names no project (nil,
// or one without an ID) is refused with project.ErrMissing and changes
// nothing; it never acts on the default project, where the same calls
// succeed.
func TestCallWithoutProjectIsRefused(t *testing.T) {
	b, db := newBackend(t, nil)
	ctx := context.Background()
	a, _, docID := attachTwo(t, b)

	for name, none := range map[string]*database.ProjectInfo{"nil": nil, "empty ID": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := b.ActivateClient(ctx, none, "stranger", nil)
			assert.ErrorIs(t, err, project.ErrMissing, "activate")
			_, _, err = b.AttachDocument(ctx, none, 0, a, "other", pack(0, 0))
			assert.ErrorIs(t, err, project.ErrMissing, "attach")
			_, err = b.PushPull(ctx, none, 0, a, docID, pack(0, 0), false)
			assert.ErrorIs(t, err, project.ErrMissing, "pushpull")
			_, _, err = b.Watch(ctx, none, 0, a, docID)
			assert.ErrorIs(t, err, project.ErrMissing, "watch")
			_, err = b.DocumentKey(ctx, none, docID)
			assert.ErrorIs(t, err, project.ErrMissing, "document key")
			_, err = b.DocumentSizeLimit(none)
			assert.ErrorIs(t, err, project.ErrMissing, "size limit")
			_, err = b.ListRevisions(ctx, none, a, docID, database.RevisionPaging{})
			assert.ErrorIs(t, err, project.ErrMissing, "list revisions")
			_, err = b.DocumentSummary(ctx, none, 0, docID, true, true)
			assert.ErrorIs(t, err, project.ErrMissing, "document summary")
			_, err = b.CompactDocument(ctx, none, 0, docID, true)
			assert.ErrorIs(t, err, project.ErrMissing, "compact")
			assert.ErrorIs(t, b.CheckClient(ctx, none, a), project.ErrMissing, "check client")
			_, err = b.AttachedDocuments(ctx, none, a)
			assert.ErrorIs(t, err, project.ErrMissing, "attached documents")
			assert.ErrorIs(t, b.DetachClient(ctx, none, 0, a, docID), project.ErrMissing, "detach client")
			assert.ErrorIs(t, b.DeactivateClient(ctx, none, a, nil), project.ErrMissing, "deactivate")
		})
	}

	// Nothing changed: no client "stranger", no document "other", and the
	// client is still active and attached.
	clients, err := db.FindInactiveClients(ctx, time.Now().Add(time.Hour), "", 10)
	require.NoError(t, err)
	assert.Len(t, clients, 2, "the clients attachTwo activated, no other")
	_, err = db.FindDocumentByKey(ctx, database.DefaultProjectID, "other")
	assert.ErrorIs(t, err, database.ErrDocumentNotFound)
	require.NoError(t, b.CheckClient(ctx, defaultProject, a))
	attached, err := b.AttachedDocuments(ctx, defaultProject, a)
	require.NoError(t, err)
	assert.Equal(t, []string{docID}, attached)
	_, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 0), false)
	assert.NoError(t, err)
}
