package clustertest_test

import (
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// adminOf returns an AdminService client of the node.
func adminOf(n *clustertest.Node) v1connect.AdminServiceClient {
	return v1connect.NewAdminServiceClient(http.DefaultClient, n.URL())
}

func withSecret[T any](msg *T, secret string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "API-Key "+secret)
	return req
}

// defaultSecret returns the default project's secret key.
func defaultSecret(t *testing.T, c v1connect.AdminServiceClient) string {
	t.Helper()
	ctx := wire.Context(t)
	in, err := c.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	require.NoError(t, err)
	req := connect.NewRequest(&api.GetProjectRequest{Name: "default"})
	req.Header().Set("Authorization", "Bearer "+in.Msg.Token)
	p, err := c.GetProject(ctx, req)
	require.NoError(t, err)
	return p.Msg.Project.SecretKey
}

// TestAdminDocumentsAcrossNodes: every node answers the AdminService's
// document calls with the owner's current state, built on the owner only,
// in forward and redirect mode; removal happens at the owner.
func TestAdminDocumentsAcrossNodes(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, 3, clustertest.WithMode(mode))
			ctx := wire.Context(t)
			secret := defaultSecret(t, adminOf(c.Node(0)))
			key := wire.UniqueKey(t, "doc")
			writer := wire.NewReplica(t, c.Node(0).ConnectJSON())
			_, err := writer.AttachWith(ctx, key, map[string]string{"name": `"w"`})
			if err != nil && retryable(err) { // redirect mode names the owner
				owner := ownerOf(t, c, key)
				writer = wire.NewReplica(t, owner.Node.ConnectJSON())
				_, err = writer.AttachWith(ctx, key, map[string]string{"name": `"w"`})
			}
			require.NoError(t, err)
			owner := ownerOf(t, c, key).Node
			if writer.C != owner.ConnectJSON() {
				writer.C = owner.ConnectJSON()
			}
			writer.Edit(3)
			writer.MustPushPull()

			built := make([]int64, 3)
			for i := range 3 {
				built[i] = c.Node(i).Server().Backend().Metrics().DocumentsBuilt.Load()
			}
			var want string
			for i := range 3 {
				for range 2 {
					got, err := adminOf(c.Node(i)).GetDocument(ctx, withSecret(&api.GetDocumentRequest{DocumentKey: key}, secret))
					require.NoError(t, err, "node %d", i)
					d := got.Msg.Document
					require.Equal(t, writer.DocID, d.Id)
					require.EqualValues(t, 1, d.AttachedClients)
					require.Contains(t, d.Root, writer.SetKey(writer.LastSeq))
					require.Contains(t, d.Presences, writer.ID)
					if want == "" {
						want = d.Root
					}
					require.Equal(t, want, d.Root, "node %d shows the owner's state", i)
				}
				list, err := adminOf(c.Node(i)).ListDocuments(ctx, withSecret(&api.ListDocumentsRequest{PageSize: 10, IncludeRoot: true}, secret))
				require.NoError(t, err)
				require.Len(t, list.Msg.Documents, 1)
				require.NotEmpty(t, list.Msg.Documents[0].Root)
			}
			for i := range 3 {
				require.Equal(t, built[i], c.Node(i).Server().Backend().Metrics().DocumentsBuilt.Load(),
					"node %d built the document for the admin calls", i)
			}

			// The owner's newest state, right after a push.
			writer.Edit(1)
			writer.MustPushPull()
			for i := range 3 {
				got, err := adminOf(c.Node(i)).GetDocument(ctx, withSecret(&api.GetDocumentRequest{DocumentKey: key}, secret))
				require.NoError(t, err)
				require.Contains(t, got.Msg.Document.Root, writer.SetKey(writer.LastSeq))
			}

			// The other calls from a node that does not own the document.
			far := otherNodes(c, owner)[0]
			fa := adminOf(far)
			many, err := fa.GetDocuments(ctx, withSecret(&api.GetDocumentsRequest{DocumentKeys: []string{key}, IncludeRoot: true, IncludePresences: true}, secret))
			require.NoError(t, err)
			require.Len(t, many.Msg.Documents, 1)
			require.Contains(t, many.Msg.Documents[0].Root, writer.SetKey(writer.LastSeq))
			require.Contains(t, many.Msg.Documents[0].Presences, writer.ID)
			found, err := fa.SearchDocuments(ctx, withSecret(&api.SearchDocumentsRequest{Query: key, PageSize: 5}, secret))
			require.NoError(t, err)
			require.EqualValues(t, 1, found.Msg.TotalCount)
			changes, err := fa.ListChanges(ctx, withSecret(&api.ListChangesRequest{DocumentKey: key}, secret))
			require.NoError(t, err)
			head := int64(len(changes.Msg.Changes))
			require.Positive(t, head)
			meta, err := fa.GetSnapshotMeta(ctx, withSecret(&api.GetSnapshotMetaRequest{DocumentKey: key, ServerSeq: head}, secret))
			require.NoError(t, err)
			require.NotEmpty(t, meta.Msg.Snapshot)
			created, err := fa.CreateDocument(ctx, withSecret(&api.CreateDocumentRequest{DocumentKey: key + "-new"}, secret))
			require.NoError(t, err)
			require.Equal(t, "{}", created.Msg.Document.Root)
			_, err = fa.CreateDocument(ctx, withSecret(&api.CreateDocumentRequest{DocumentKey: key}, secret))
			require.Equal(t, connect.CodeAlreadyExists, connect.CodeOf(err))

			_, err = adminOf(far).GetDocument(ctx, withSecret(&api.GetDocumentRequest{DocumentKey: "missing-" + key}, secret))
			require.Equal(t, connect.CodeNotFound, connect.CodeOf(err))
			_, err = adminOf(far).RemoveDocumentByAdmin(ctx, withSecret(&api.RemoveDocumentByAdminRequest{DocumentKey: key}, secret))
			require.Equal(t, connect.CodeFailedPrecondition, connect.CodeOf(err), "attached: %v", err)
			require.Equal(t, "ErrDocumentAttached", wire.ErrorInfo(err)["code"])
			_, err = adminOf(far).GetDocument(ctx, withSecret(&api.GetDocumentRequest{DocumentKey: key}, secret))
			require.NoError(t, err, "nothing removed")
			_, err = adminOf(far).RemoveDocumentByAdmin(ctx, withSecret(&api.RemoveDocumentByAdminRequest{DocumentKey: key, Force: true}, secret))
			require.NoError(t, err)
			pack, err := writer.PushPull(ctx)
			require.NoError(t, err)
			require.True(t, pack.IsRemoved, "the owner learned the removal")
		})
	}
}

// TestAdminChannelsAcrossNodes: channels of groups owned by different
// nodes are listed and counted from any node, and a broadcast by admin on
// any node reaches the watchers at the owner.
func TestAdminChannelsAcrossNodes(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	secret := defaultSecret(t, adminOf(c.Node(0)))
	prefix := wire.UniqueKey(t, "g")
	var groups []string
	owners := map[string]bool{}
	for i := 0; len(owners) < 2 && i < 40; i++ {
		g := prefix + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		o, err := c.Node(0).Affinity().Owner(ctx, channel.RoutingKey(g))
		require.NoError(t, err)
		owners[o.Addr] = true
		groups = append(groups, g)
	}
	require.GreaterOrEqual(t, len(owners), 2, "groups owned by two nodes")
	var watcher *channelClient
	for i, g := range groups {
		cc := &channelClient{r: wire.NewReplica(t, c.Node(i%3).ConnectJSON()), key: g + ".room"}
		cc.attach(t)
		if i == 0 {
			watcher = cc
		}
	}
	for i := range 3 {
		list, err := adminOf(c.Node(i)).ListChannels(ctx, withSecret(&api.ListChannelsRequest{Query: prefix, Limit: 100}, secret))
		require.NoError(t, err)
		require.Len(t, list.Msg.Channels, len(groups), "node %d lists every node's channels", i)
		for j, ch := range list.Msg.Channels {
			require.EqualValues(t, 1, ch.SessionCount)
			if j > 0 {
				require.Less(t, list.Msg.Channels[j-1].Key, ch.Key)
			}
		}
		keys := []string{groups[0], groups[len(groups)-1] + ".room"}
		got, err := adminOf(c.Node(i)).GetChannels(ctx, withSecret(&api.GetChannelsRequest{ChannelKeys: keys, IncludeSubPath: true}, secret))
		require.NoError(t, err)
		require.EqualValues(t, 1, got.Msg.Channels[0].SessionCount)
		require.EqualValues(t, 1, got.Msg.Channels[1].SessionCount)
	}

	w := watchChannel(t, watcher.r.C, watcher.r.ID, watcher.key)
	awaitCount(t, w, 1)
	far := otherNodes(c, ownerOf(t, c, channel.RoutingKey(watcher.key)).Node)[0]
	_, err := adminOf(far).BroadcastByAdmin(ctx, withSecret(&api.BroadcastByAdminRequest{ChannelKey: watcher.key, Topic: "notice", Payload: []byte(`"hi"`)}, secret))
	require.NoError(t, err)
	for {
		m, err := w.NextWithin(wire.WaitTimeout)
		require.NoError(t, err)
		if ev := m.GetEvent().GetChannelEvent().GetEvent(); ev.GetType() == api.ChannelEvent_TYPE_BROADCAST {
			require.Equal(t, "notice", ev.GetTopic())
			break
		}
	}
}
