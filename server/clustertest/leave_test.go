package clustertest_test

import (
	"slices"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestStoppedNodeLeavesMembership stops nodes gracefully and checks that a
// stopped node is no member once Stop returns: otherwise the survivors would
// place documents on a node that is gone until its lease ran out. Several
// rounds, as the node's own revocation races with its membership loop.
func TestStoppedNodeLeavesMembership(t *testing.T) {
	for round := range 20 {
		c := clustertest.Start(t, 2)
		stopped := c.Node(0)
		c.Stop(0)
		members, err := c.Store().Members(wire.Context(t))
		wire.Must(t, err, "list members")
		for _, m := range members {
			if m.Addr == stopped.Addr() {
				t.Fatalf("round %d: the stopped node %s is a member again (incarnation %d) after a graceful stop; members %v",
					round, stopped.Addr(), m.Incarnation, members)
			}
		}
		if view := c.Node(1).Affinity().Members(); slices.Contains(view, stopped.Addr()) {
			// The survivor may not have seen the leave yet; the store's view
			// above is the one that matters.
			t.Logf("round %d: survivor still lists the stopped node", round)
		}
	}
}
