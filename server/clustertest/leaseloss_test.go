package clustertest_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestCallsDuringLeaseLossFailRetryably ends a node's lease (as a stalled
// renewal would) while clients attach new documents through it. The node
// registers again at once; calls caught in between may fail, but only with
// a code the SDK retries: any other code stops the client's sync loop.
func TestCallsDuringLeaseLossFailRetryably(t *testing.T) {
	c := clustertest.Start(t, 2)
	n := c.Node(0)
	const rounds, callers = 100, 4
	var (
		mu       sync.Mutex
		failures = map[string]int{}
		calls    int
	)
	for range rounds {
		members, err := c.Store().Members(wire.Context(t))
		wire.Must(t, err, "list members")
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				r := wire.NewReplica(t, n.ConnectProto())
				_, err := r.Attach(wire.Context(t), wire.UniqueKey(t, "doc"))
				mu.Lock()
				defer mu.Unlock()
				calls++
				if err != nil && !retryable(err) {
					failures[fmt.Sprintf("%v (ErrorInfo %v)", err, wire.ErrorInfo(err))]++
				}
			})
		}
		for _, m := range members {
			if m.Addr == n.Addr() {
				c.Store().ExpireLease(m)
			}
		}
		wg.Wait()
		c.WaitMembers(2)
	}
	if len(failures) > 0 {
		t.Fatalf("attaches during a lease loss failed with codes the SDK does not retry (of %d calls): %v", calls, failures)
	}
}
