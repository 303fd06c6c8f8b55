package clustertest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// TestRefusedRelayDropsCachedOwner moves a document's binding from node 1 to
// node 2 behind the back of node 0, which relays a client's calls and still
// believes node 1 owns it. Node 1 refuses the relayed call it no longer owns;
// node 0 must then forget its cached owner, so the client's next call reaches
// node 2 and succeeds.
func TestRefusedRelayDropsCachedOwner(t *testing.T) {
	c := clustertest.Start(t, 3)
	via, former, next := c.Node(0), c.Node(1), c.Node(2)
	key := keyOwnedBy(t, c, former) // node 0 now caches node 1 as the owner
	r := wire.NewReplica(t, via.ConnectJSON())
	r.MustAttach(key)
	r.Edit(1)
	r.MustPushPull()

	ctx := wire.Context(t)
	owner, err := c.OwnerOf(ctx, key)
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
	require.Equal(t, next.Addr(), target.Addr, "node 2 is a member")
	require.NoError(t, c.Store().Release(ctx, owner.Binding))
	_, err = c.Store().Bind(ctx, key, target)
	require.NoError(t, err)
	former.Affinity().Forget(key) // node 1 learns from the store that node 2 owns it

	// The first call may be refused: node 0 relays it to node 1 on its
	// cached belief. It must not keep that belief.
	r.Edit(1)
	if _, err := r.PushPull(ctx); err != nil {
		t.Logf("first call after the move: %v", err)
	}
	r.Edit(1)
	_, err = r.PushPull(ctx)
	require.NoError(t, err, "the call after a refused relay reaches the new owner")
	now, err := c.OwnerOf(ctx, key)
	require.NoError(t, err)
	require.Equal(t, next.Addr(), now.Node.Addr())
}
