package clustertest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestOwnerChangesUnderLoad keeps six clients (two through each node)
// pushing to one document while its owner is stopped, then while the next
// owner is partitioned and healed. Clients retry what the SDK retries and
// move to another node when theirs is gone. At the end every acknowledged
// change is in the log exactly once, the log has no gap, and every client
// has pulled every other client's changes: no two nodes ever served the
// document at once.
func TestOwnerChangesUnderLoad(t *testing.T) {
	c := clustertest.Start(t, 4, clustertest.WithNodeTTL(time.Second))
	docKey := wire.UniqueKey(t, "doc")
	clients := map[*clustertest.Node]v1connect.YorkieServiceClient{}
	for _, n := range c.Nodes() {
		clients[n] = n.ConnectJSON()
	}
	var rs []*wire.Replica
	for i := range 6 {
		r := wire.NewReplica(t, clients[c.Node(i%3)])
		r.MustAttach(docKey)
		rs = append(rs, r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg       sync.WaitGroup
		acks     atomic.Int64
		failures atomic.Int64
	)
	for i, r := range rs {
		wg.Go(func() {
			next := i
			for ctx.Err() == nil {
				r.Edit(1)
				callCtx, callCancel := context.WithTimeout(ctx, wire.WaitTimeout)
				_, err := r.PushPull(callCtx)
				callCancel()
				switch {
				case err == nil:
					acks.Add(1)
				case ctx.Err() != nil:
					return
				case !retryable(err):
					t.Errorf("client %d: non-retryable error: %v", i, err)
					return
				default:
					failures.Add(1)
					// Try another node next, as a load balancer would.
					running := c.Running()
					next++
					r.C = clients[running[next%len(running)]]
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	progress := func(what string) {
		t.Helper()
		from := acks.Load()
		poll.Until(t, wire.WaitTimeout, what, func() error {
			if got := acks.Load() - from; got < 30 {
				return fmt.Errorf("%d PushPulls acknowledged", got)
			}
			return nil
		})
	}

	progress("pushing before any change")
	first := ownerOf(t, c, docKey)
	c.Stop(first.Node.Index())
	progress("pushing after the owner stopped")
	second := c.WaitOwner(docKey, func(o clustertest.Owner) bool { return o.Node != first.Node })
	c.Partition(second.Node.Index())
	progress("pushing after the next owner was partitioned")
	third := c.WaitOwner(docKey, func(o clustertest.Owner) bool { return o.Node != second.Node && o.Node != first.Node })
	c.Heal(second.Node.Index())
	progress("pushing after the partition healed")
	cancel()
	wg.Wait()
	if t.Failed() {
		return
	}
	if !(first.Binding.Epoch < second.Binding.Epoch && second.Binding.Epoch < third.Binding.Epoch) {
		t.Errorf("epochs did not grow: %d, %d, %d", first.Binding.Epoch, second.Binding.Epoch, third.Binding.Epoch)
	}

	// Everyone settles through a live node and pulls everything.
	for i, r := range rs {
		r.C = clients[c.Running()[i%len(c.Running())]]
		syncUntilAcked(r, fmt.Sprintf("client %d final sync", i))
	}
	for _, r := range rs {
		r.MustPushPull()
	}
	for i, r := range rs {
		for _, other := range rs {
			if other != r {
				if err := hasPulled(r, other); err != nil {
					t.Fatalf("client %d: %v", i, err)
				}
			}
		}
	}
	log := checkLog(t, c.DB(), rs[0].DocID)
	checkStored(t, log, rs...)
	t.Logf("%d changes stored, %d PushPulls acknowledged, %d retried", len(log), acks.Load(), failures.Load())
}
