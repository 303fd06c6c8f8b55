package admin_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestAdminRevisions lists, gets and restores a document's revisions
// through the AdminService, with bad inputs and the project switch for
// automatic revisions.
func TestAdminRevisions(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		srv := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		token := login(t, c, "admin", "admin")

		yc := servertest.Client(t, srv, servertest.ConnectProto)
		r := wire.NewReplica(t, yc)
		_, err := r.AttachWith(ctx, "doc-r", nil)
		require.NoError(t, err)
		r.Edit(2)
		r.MustPushPull()
		created, err := yc.CreateRevision(ctx, connect.NewRequest(&api.CreateRevisionRequest{
			ClientId: r.ID, DocumentId: r.DocID, Label: "v1", Description: "two keys",
		}))
		require.NoError(t, err)
		rev := created.Msg.Revision
		for _, l := range []string{"v2", "v3"} {
			_, err := yc.CreateRevision(ctx, connect.NewRequest(&api.CreateRevisionRequest{ClientId: r.ID, DocumentId: r.DocID, Label: l}))
			require.NoError(t, err)
		}

		list, err := c.ListRevisionsByAdmin(ctx, authed(&api.ListRevisionsByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", PageSize: 2,
		}, token))
		require.NoError(t, err)
		require.EqualValues(t, 2, list.Msg.TotalCount)
		assert.Equal(t, "v3", list.Msg.Revisions[0].Label)
		assert.Equal(t, "v2", list.Msg.Revisions[1].Label)
		fwd, err := c.ListRevisionsByAdmin(ctx, authed(&api.ListRevisionsByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", PageSize: 2, Offset: 2, IsForward: true,
		}, token))
		require.NoError(t, err)
		require.Len(t, fwd.Msg.Revisions, 1)
		assert.Equal(t, "v3", fwd.Msg.Revisions[0].Label)

		got, err := c.GetRevisionByAdmin(ctx, authed(&api.GetRevisionByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", RevisionId: rev.Id,
		}, token))
		require.NoError(t, err)
		assert.Equal(t, rev.Snapshot, got.Msg.Revision.Snapshot)
		assert.Equal(t, "two keys", got.Msg.Revision.Description)

		// Restore: the replica pulls one change and the document is the
		// revision's content again.
		r.Edit(2)
		r.MustPushPull()
		_, err = c.RestoreRevisionByAdmin(ctx, authed(&api.RestoreRevisionByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", RevisionId: rev.Id,
		}, token))
		require.NoError(t, err)
		pulled := r.MustPushPull()
		require.Len(t, pulled.Changes, 1)
		assert.Equal(t, "restore revision", pulled.Changes[0].GetMessage())
		after, err := yc.CreateRevision(ctx, connect.NewRequest(&api.CreateRevisionRequest{ClientId: r.ID, DocumentId: r.DocID, Label: "after"}))
		require.NoError(t, err)
		assert.Equal(t, rev.Snapshot, after.Msg.Revision.Snapshot)

		// Bad input: an unknown revision or document, another user, no token.
		_, err = c.GetRevisionByAdmin(ctx, authed(&api.GetRevisionByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", RevisionId: "0123456789abcdef01234567",
		}, token))
		wantCode(t, err, connect.CodeNotFound, "ErrRevisionNotFound")
		_, err = c.RestoreRevisionByAdmin(ctx, authed(&api.RestoreRevisionByAdminRequest{
			ProjectName: "default", DocumentKey: "doc-r", RevisionId: "0123456789abcdef01234567",
		}, token))
		wantCode(t, err, connect.CodeNotFound, "ErrRevisionNotFound")
		_, err = c.ListRevisionsByAdmin(ctx, authed(&api.ListRevisionsByAdminRequest{ProjectName: "default", DocumentKey: "no-such-doc"}, token))
		wantCode(t, err, connect.CodeNotFound, "ErrDocumentNotFound")
		_, err = c.ListRevisionsByAdmin(ctx, authed(&api.ListRevisionsByAdminRequest{ProjectName: "default", DocumentKey: "doc-r", PageSize: -1}, token))
		wantCode(t, err, connect.CodeInvalidArgument, "")
		_, err = c.ListRevisionsByAdmin(ctx, connect.NewRequest(&api.ListRevisionsByAdminRequest{ProjectName: "default", DocumentKey: "doc-r"}))
		wantCode(t, err, connect.CodeUnauthenticated, "")

		// The project's switch for revisions at snapshots: on by default.
		p, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "default"}, token))
		require.NoError(t, err)
		assert.True(t, p.Msg.Project.AutoRevisionEnabled)
		updated, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Msg.Project.Id, Fields: &api.UpdatableProjectFields{
			AutoRevisionEnabled: wrapperspb.Bool(false),
		}}, token))
		require.NoError(t, err)
		assert.False(t, updated.Msg.Project.AutoRevisionEnabled)
		again, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "default"}, token))
		require.NoError(t, err)
		assert.False(t, again.Msg.Project.AutoRevisionEnabled)
	})
}
