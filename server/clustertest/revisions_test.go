package clustertest_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestRevisionsAcrossNodes: revision calls are served by the document's
// owner. In forward mode a client's call at another node is relayed there;
// in redirect mode it is refused naming the owner. An operator's restore
// reaches the owner from any node in both modes, and the restore reaches
// the attached clients.
func TestRevisionsAcrossNodes(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, 3, clustertest.WithMode(mode))
			ctx := wire.Context(t)
			key := wire.UniqueKey(t, "rev")
			// An attach succeeds wherever it lands and binds the document.
			wire.NewReplica(t, c.Node(0).ConnectJSON()).MustAttach(key)
			owner := ownerOf(t, c, key).Node
			writer := wire.NewReplica(t, owner.ConnectJSON())
			writer.MustAttach(key)
			reader := wire.NewReplica(t, owner.ConnectJSON())
			reader.MustAttach(key)
			writer.Edit(2)
			writer.MustPushPull()
			reader.MustPushPull()

			elsewhere := otherNodes(c, owner)[0].ConnectJSON()
			create := connect.NewRequest(&api.CreateRevisionRequest{ClientId: writer.ID, DocumentId: writer.DocID, Label: "v1"})
			created, err := elsewhere.CreateRevision(ctx, create)
			if mode == routing.Redirect {
				require.Error(t, err)
				assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err), "redirect names the owner: %v", err)
				created, err = owner.ConnectJSON().CreateRevision(ctx, connect.NewRequest(create.Msg))
			}
			require.NoError(t, err)
			rev := created.Msg.Revision
			listAt := elsewhere
			if mode == routing.Redirect {
				listAt = owner.ConnectJSON()
			}
			list, err := listAt.ListRevisions(ctx, connect.NewRequest(&api.ListRevisionsRequest{
				ClientId: reader.ID, DocumentId: reader.DocID, PageSize: 10,
			}))
			require.NoError(t, err)
			require.Len(t, list.Msg.Revisions, 1)
			assert.Equal(t, rev.Id, list.Msg.Revisions[0].Id)

			// The writer moves on; the reader restores through a node that
			// is not the owner in forward mode.
			writer.Edit(2)
			writer.MustPushPull()
			_, err = listAt.RestoreRevision(ctx, connect.NewRequest(&api.RestoreRevisionRequest{
				ClientId: reader.ID, DocumentId: reader.DocID, RevisionId: rev.Id,
			}))
			require.NoError(t, err)
			pulled := writer.MustPushPull()
			require.NotEmpty(t, pulled.Changes)
			assert.Equal(t, "restore revision", pulled.Changes[len(pulled.Changes)-1].GetMessage())

			// An operator restores through a node that is not the owner.
			admin := adminOf(otherNodes(c, owner)[0])
			secret := defaultSecret(t, admin)
			_, err = admin.RestoreRevisionByAdmin(ctx, withSecret(&api.RestoreRevisionByAdminRequest{
				DocumentKey: key, RevisionId: rev.Id,
			}, secret))
			require.NoError(t, err)
			pulled = reader.MustPushPull()
			require.NotEmpty(t, pulled.Changes)
			assert.Equal(t, "restore revision", pulled.Changes[len(pulled.Changes)-1].GetMessage())
			log := checkLog(t, c.DB(), writer.DocID)
			assert.NotEmpty(t, log)
		})
	}
}
