package clustertest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/clustertest"
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
