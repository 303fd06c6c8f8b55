package clustertest_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestCompactionAcrossNodes: CompactDocumentByAdmin on a node that does not
// own the document is relayed to the owner, which compacts it (in forward
// and redirect mode): refused while attached unless forced, then the client
// attached before gets ErrEpochMismatch and a late joiner on another node
// attaches the one compacted change.
func TestCompactionAcrossNodes(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, 3, clustertest.WithMode(mode))
			ctx := wire.Context(t)
			secret := defaultSecret(t, adminOf(c.Node(0)))
			key := wire.UniqueKey(t, "doc")
			// An attach is handed to the owner from any node, in both modes.
			writer := wire.NewReplica(t, c.Node(0).ConnectJSON())
			writer.MustAttach(key)
			owner := ownerOf(t, c, key).Node
			writer.C = owner.ConnectJSON()
			writer.Edit(5)
			writer.MustPushPull()

			far := otherNodes(c, owner)[0]
			_, err := adminOf(far).CompactDocumentByAdmin(ctx, withSecret(&api.CompactDocumentByAdminRequest{DocumentKey: key}, secret))
			require.Equal(t, connect.CodeFailedPrecondition, connect.CodeOf(err), "attached: %v", err)
			require.Equal(t, "ErrDocumentAttached", wire.ErrorInfo(err)["code"])

			res, err := adminOf(far).CompactDocumentByAdmin(ctx, withSecret(&api.CompactDocumentByAdminRequest{DocumentKey: key, Force: true}, secret))
			require.NoError(t, err)
			require.True(t, res.Msg.Compacted)
			for _, n := range c.Nodes() {
				want := int64(0)
				if n == owner {
					want = 1
				}
				require.Equal(t, want, n.Server().Backend().Metrics().Compactions.Load(), "node %d", n.Index())
			}

			writer.Edit(1)
			_, err = writer.PushPull(ctx)
			require.Equal(t, connect.CodeFailedPrecondition, connect.CodeOf(err), "stale epoch: %v", err)
			require.Equal(t, "ErrEpochMismatch", wire.ErrorInfo(err)["code"])

			late := wire.NewReplica(t, far.ConnectJSON())
			resp, err := late.Attach(ctx, key)
			require.NoError(t, err)
			changes := resp.GetChangePack().GetChanges()
			require.Len(t, changes, 1, "the late joiner gets the compacted change")
			require.Equal(t, make([]byte, 12), changes[0].GetId().GetActorId())
			require.NotEmpty(t, changes[0].GetOperations())
		})
	}
}
