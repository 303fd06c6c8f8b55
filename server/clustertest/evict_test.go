package clustertest_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestCrashedOwnerIsEvictedBeforeItsLeaseEnds crashes a document's owner on
// a cluster whose leases last a minute: its port refuses connections, so
// the survivors evict it (heartbeats, or the first relay refused) and the
// document moves long before the lease could have run out. The clients go
// on through the survivors with nothing lost, the new binding has a larger
// epoch, and a write with the crashed owner's epoch is refused.
func TestCrashedOwnerIsEvictedBeforeItsLeaseEnds(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Minute))
	f := newMoveFixture(t, c)
	for _, r := range f.all() {
		r.Edit(1)
	}
	c.Abort(f.owner.Node.Index())
	survivors := otherNodes(c, f.owner.Node)
	owner := f.continueOnNewOwner(t, survivors)
	require.NotEqual(t, f.owner.Node, owner.Node, "the crashed node still owns the document")
	for _, n := range survivors {
		require.NotContains(t, n.Server().Affinity().Members(), f.owner.Node.Addr(), "node %d still counts the crashed node as a member", n.Index())
	}
	checkOldEpochFenced(t, f)
	checkStored(t, checkLog(t, c.DB(), f.near.DocID), f.all()...)
}

// TestReachWitnessesForOtherNodes: the ClusterService's Reach, which a node
// asks of a witness before it evicts a member, answers whether the
// receiving node reaches the member (a live one: yes; one that crashed, or
// an address that is no member: no), and refuses a caller without the
// cluster secret.
func TestReachWitnessesForOtherNodes(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Minute))
	ctx := wire.Context(t)
	secret, err := c.Store().ClusterSecret(ctx)
	require.NoError(t, err)
	witness := c.Node(0)
	client := clusterClient(t, witness, secret)
	reach := func(addr string) (bool, error) {
		resp, err := client.Reach(ctx, connect.NewRequest(&clusterv1.ReachRequest{Member: addr}))
		if err != nil {
			return false, err
		}
		return resp.Msg.GetReached(), nil
	}

	reached, err := reach(c.Node(1).Addr())
	require.NoError(t, err)
	require.True(t, reached, "a live member")
	reached, err = reach("127.0.0.1:1")
	require.NoError(t, err)
	require.False(t, reached, "not a member")
	unsigned := clusterClient(t, witness, "")
	_, err = unsigned.Reach(ctx, connect.NewRequest(&clusterv1.ReachRequest{Member: c.Node(1).Addr()}))
	require.Error(t, err, "no cluster secret")

	// A crashed member refuses (or the witness has dropped it already).
	c.Abort(2)
	reached, err = reach(c.Node(2).Addr())
	require.NoError(t, err)
	require.False(t, reached, "a crashed member")
}
