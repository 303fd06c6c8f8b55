package clustertest_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// TestRefusedRelayDropsCachedOwner moves a document's binding from node 1 to
// node 2 behind the back of node 0, which relays a client's calls and still
// believes node 1 owns it. Node 1 refuses the relayed call it no longer owns;
// node 0 must then forget its cached owner and send the call to node 2, so
// the client's calls succeed.
func TestRefusedRelayDropsCachedOwner(t *testing.T) {
	c := clustertest.Start(t, 3)
	via, former, next := c.Node(0), c.Node(1), c.Node(2)
	key := keyOwnedBy(t, c, former) // node 0 now caches node 1 as the owner
	r := wire.NewReplica(t, via.ConnectJSON())
	r.MustAttach(key)
	r.Edit(1)
	r.MustPushPull()

	ctx := wire.Context(t)
	moveBehindBack(t, c, key, former, next)

	// Node 0 relays the next call to node 1 on its cached belief; node 1
	// refuses it (ErrWrongNode), and node 0 forgets that owner and routes the
	// call again, to node 2, within the same call: the client sees no error.
	r.Edit(1)
	_, err := r.PushPull(ctx)
	require.NoError(t, err, "the call is routed again to the new owner")
	r.Edit(1)
	_, err = r.PushPull(ctx)
	require.NoError(t, err, "the next call goes to the new owner")
	now, err := c.OwnerOf(ctx, key)
	require.NoError(t, err)
	require.Equal(t, next.Addr(), now.Node.Addr())
}

// TestRelayedPeekFollowsAMovedChannelGroup: node 0 still believes node 1
// owns a channel group that has moved to node 2. Its relayed PeekChannel is
// refused by node 1 (ErrWrongNode); node 0 must route it again within the
// call, as it does a document call, so the caller gets the count.
func TestRelayedPeekFollowsAMovedChannelGroup(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	via, former, next := c.Node(0), c.Node(1), c.Node(2)
	var room, binding string
	for range 200 {
		room = wire.UniqueKey(t, "room")
		binding = channel.RoutingKey(room)
		o, err := via.Affinity().Owner(ctx, binding) // node 0 caches the owner
		require.NoError(t, err)
		if o.Addr == former.Addr() {
			break
		}
		binding = ""
	}
	require.NotEmpty(t, binding, "no channel group placed on node 1 in 200 tries")
	member := &channelClient{r: wire.NewReplica(t, next.ConnectJSON()), key: room}

	moveBehindBack(t, c, binding, former, next)
	member.attach(t) // counted at node 2, the new owner

	resp, err := via.ConnectJSON().PeekChannel(ctx, connect.NewRequest(&api.PeekChannelRequest{ChannelKey: room}))
	require.NoError(t, err, "the peek is routed again to the new owner")
	require.EqualValues(t, 1, resp.Msg.GetSessionCount())
}

// moveBehindBack moves binding from former, its owner, to next in the store
// and tells former, but no other node: they keep former cached as the owner.
func moveBehindBack(t *testing.T, c *clustertest.Cluster, binding string, former, next *clustertest.Node) {
	t.Helper()
	ctx := wire.Context(t)
	owner, err := c.OwnerOf(ctx, binding)
	require.NoError(t, err)
	require.Equal(t, former.Addr(), owner.Node.Addr())
	members, err := c.Store().Members(ctx)
	require.NoError(t, err)
	var target sessionstore.Member
	for _, m := range members {
		if m.Addr == next.Addr() {
			target = m
		}
	}
	require.Equal(t, next.Addr(), target.Addr, "the next owner is a member")
	require.NoError(t, c.Store().Release(ctx, owner.Binding))
	_, err = c.Store().Bind(ctx, binding, target)
	require.NoError(t, err)
	former.Affinity().Forget(binding) // former learns from the store that next owns it
}
