package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// TestProjectSnapshotThreshold: a project's own snapshot threshold (set
// with UpdateProject) decides when its late joiners get a snapshot; a
// project without one follows the server's.
func TestProjectSnapshotThreshold(t *testing.T) {
	b, _ := configuredBackend(t, backend.Config{SnapshotThreshold: 500, SnapshotInterval: 500})
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 6 {
		a.mustPush(a.set("k", fmt.Sprint(i)))
	}
	// The server's threshold: 6 behind gets changes.
	plain := newWriter(t, b, "plain")
	_, resp, err := b.AttachDocument(context.Background(), defaultProject, 0, plain.id, "doc", pack(0, 0))
	require.NoError(t, err)
	require.Nil(t, resp.GetSnapshot())
	require.Len(t, resp.GetChanges(), 6)
	// The project's threshold of 5: a snapshot.
	p := &database.ProjectInfo{ID: database.DefaultProjectID, SnapshotThreshold: 5}
	late := newWriter(t, b, "late")
	_, resp, err = b.AttachDocument(context.Background(), p, 0, late.id, "doc", pack(0, 0))
	require.NoError(t, err)
	require.NotNil(t, resp.GetSnapshot())
	require.Empty(t, resp.GetChanges())
}
