package affinity_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// longTTL keeps leases alive for the whole test: only an eviction ends them.
const longTTL = time.Minute

// start starts a manager with cfg on a client of st.
func start(t *testing.T, st *memory.Store, cfg affinity.Config) *affinity.Manager {
	t.Helper()
	cfg.Store = st.Client()
	if cfg.TTL == 0 {
		cfg.TTL = longTTL
	}
	m, err := affinity.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, m.Start(ctx))
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m
}

// refusingAddr returns a loopback address nothing listens on.
func refusingAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// answeringAddr returns a loopback address that accepts connections until
// the test ends.
func answeringAddr(t *testing.T) string {
	t.Helper()
	addr, _ := listening(t)
	return addr
}

// listening returns a loopback address that accepts connections until the
// returned function (or the end of the test) closes it; then it refuses.
func listening(t *testing.T) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String(), func() { _ = l.Close() }
}

// keyOwnedBy returns a document key that placement binds to owner.
func keyOwnedBy(t *testing.T, owner *affinity.Manager) (string, affinity.Owner) {
	t.Helper()
	for i := range 200 {
		key := fmt.Sprintf("p/doc-%d", i)
		o, err := owner.Owner(context.Background(), key)
		require.NoError(t, err)
		if o.Self {
			return key, o
		}
	}
	t.Fatalf("no key placed on %s in 200 tries", owner.Addr())
	return "", affinity.Owner{}
}

func waitMembers(t *testing.T, m *affinity.Manager, want ...string) {
	t.Helper()
	poll.UntilTrue(t, waitTimeout, fmt.Sprintf("members %v", want), func() bool {
		got := m.Members()
		if len(got) != len(want) {
			return false
		}
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				return false
			}
		}
		return true
	})
}

// TestSuspectEvictsRefusingOwner: a member whose port refuses connections
// is evicted at once by the node that suspects it; its document is bound
// again with a larger epoch, and the evicted node, alive after all, is told
// that it lost the document.
func TestSuspectEvictsRefusingOwner(t *testing.T) {
	st := memory.New(memory.Config{})
	lost := make(chan []string, 1)
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t)})
	b := start(t, st, affinity.Config{AdvertiseAddr: refusingAddr(t), OnLost: func(keys []string) { lost <- keys }})
	waitMembers(t, a, a.Addr(), b.Addr())
	key, old := keyOwnedBy(t, b)
	o, err := a.Owner(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, old.Epoch, o.Epoch)

	require.True(t, a.Suspect(context.Background(), b.Addr()), "a refusing member is evicted")
	select {
	case keys := <-lost:
		require.Equal(t, []string{key}, keys)
	case <-time.After(waitTimeout):
		t.Fatal("the evicted node was not told it lost its document")
	}
	a.Forget(key)
	o, err = a.Owner(context.Background(), key)
	require.NoError(t, err)
	require.Greater(t, o.Epoch, old.Epoch, "the document is bound again with a larger epoch")
}

// TestSuspectSparesAnsweringMember: a refusal the suspecting node cannot
// confirm (the member's port answers) evicts nothing.
func TestSuspectSparesAnsweringMember(t *testing.T) {
	st := memory.New(memory.Config{})
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t)})
	b := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t)})
	waitMembers(t, a, a.Addr(), b.Addr())
	key, old := keyOwnedBy(t, b)

	require.False(t, a.Suspect(context.Background(), b.Addr()))
	require.ElementsMatch(t, []string{a.Addr(), b.Addr()}, a.Members())
	o, err := a.Owner(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, old, affinity.Owner{Addr: o.Addr, SessionKey: o.SessionKey, Epoch: o.Epoch, Self: true})
}

// TestHeartbeatEvictsCrashedMember: a member that crashed (its manager
// stopped renewing, its lease would live a minute more) and whose port
// refuses is evicted by another node's heartbeats with no call in between,
// and its document moves.
func TestHeartbeatEvictsCrashedMember(t *testing.T) {
	st := memory.New(memory.Config{})
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), HeartbeatInterval: 20 * time.Millisecond})
	addr, crash := listening(t)
	b := start(t, st, affinity.Config{AdvertiseAddr: addr})
	waitMembers(t, a, a.Addr(), b.Addr())
	key, old := keyOwnedBy(t, b)
	b.Abandon()
	crash()

	waitMembers(t, a, a.Addr())
	o, err := a.Owner(context.Background(), key)
	require.NoError(t, err)
	require.True(t, o.Self)
	require.Greater(t, o.Epoch, old.Epoch)
}

// TestMissedHeartbeatsEvictMember: a member whose heartbeats time out
// HeartbeatMisses times in a row is evicted; one that only fails with
// errors of the prober's own making is not.
func TestMissedHeartbeatsEvictMember(t *testing.T) {
	st := memory.New(memory.Config{})
	silent, local := answeringAddr(t), answeringAddr(t)
	dial := func(ctx context.Context, addr string) error {
		switch addr {
		case silent:
			<-ctx.Done()
			return ctx.Err()
		case local:
			return fmt.Errorf("socket: too many open files")
		}
		return nil
	}
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), HeartbeatInterval: 10 * time.Millisecond,
		HeartbeatMisses: 2, Dial: dial})
	b := start(t, st, affinity.Config{AdvertiseAddr: silent})
	c := start(t, st, affinity.Config{AdvertiseAddr: local})
	waitMembers(t, a, a.Addr(), b.Addr(), c.Addr())
	b.Abandon()

	waitMembers(t, a, a.Addr(), c.Addr())
}

// TestMissedHeartbeatsHoldDown: a member evicted for missed heartbeats that
// registers again (it was only cut off from the prober) is not evicted for
// missed heartbeats again at once.
func TestMissedHeartbeatsHoldDown(t *testing.T) {
	st := memory.New(memory.Config{})
	bAddr := answeringAddr(t)
	var silent atomic.Bool
	var dialsToB atomic.Int64
	dial := func(ctx context.Context, addr string) error {
		if addr == bAddr {
			dialsToB.Add(1)
			if silent.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), HeartbeatInterval: 10 * time.Millisecond,
		HeartbeatMisses: 2, Dial: dial, Registerer: reg})
	lost := make(chan []string, 1)
	b := start(t, st, affinity.Config{AdvertiseAddr: bAddr, OnLost: func(keys []string) { lost <- keys }})
	waitMembers(t, a, a.Addr(), b.Addr())
	key, _ := keyOwnedBy(t, b)

	silent.Store(true)
	select {
	case keys := <-lost:
		require.Equal(t, []string{key}, keys)
	case <-time.After(waitTimeout):
		t.Fatal("b was not evicted for missed heartbeats")
	}
	// b registers again at once (its manager runs); a goes on missing it.
	waitMembers(t, a, a.Addr(), b.Addr())
	from := dialsToB.Load()
	poll.UntilTrue(t, waitTimeout, "more heartbeats to b", func() bool { return dialsToB.Load() >= from+10 })
	require.Equal(t, 1.0, evictions(t, reg), "evictions of b")
	require.Contains(t, a.Members(), b.Addr())
}

// TestPeerCutOffFromOneNodeIsEvictedOnce: a member alive and registered
// whose port refuses one node only (a firewall rejecting that node, the
// store reachable from both) is evicted by that node once; it registers
// again, and the node, still refused by heartbeats and by a relay's
// suspicion, does not evict it again (no flapping) until a heartbeat
// reaches it; then a refusal evicts it at once again, as after a crash.
func TestPeerCutOffFromOneNodeIsEvictedOnce(t *testing.T) {
	st := memory.New(memory.Config{})
	bAddr := answeringAddr(t)
	var cut atomic.Bool
	var dialsToB atomic.Int64
	dial := func(ctx context.Context, addr string) error {
		if addr == bAddr {
			dialsToB.Add(1)
			if cut.Load() {
				return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), HeartbeatInterval: 10 * time.Millisecond,
		Dial: dial, Registerer: reg})
	lost := make(chan []string, 2)
	b := start(t, st, affinity.Config{AdvertiseAddr: bAddr, OnLost: func(keys []string) { lost <- keys }})
	waitMembers(t, a, a.Addr(), b.Addr())
	keyOwnedBy(t, b)

	cut.Store(true)
	select {
	case <-lost:
	case <-time.After(waitTimeout):
		t.Fatal("b was not evicted when its port refused a")
	}
	// b registers again at once (its manager runs); a goes on being refused.
	waitMembers(t, a, a.Addr(), b.Addr())
	from := dialsToB.Load()
	poll.UntilTrue(t, waitTimeout, "more heartbeats to b", func() bool { return dialsToB.Load() >= from+10 })
	require.False(t, a.Suspect(context.Background(), b.Addr()), "a relay's refusal evicted b again")
	require.Equal(t, 1.0, evictions(t, reg), "evictions of b")
	require.Contains(t, a.Members(), b.Addr())

	// The cut heals: a heartbeat reaches b. A refusal after that evicts.
	keyOwnedBy(t, b)
	cut.Store(false)
	from = dialsToB.Load()
	poll.UntilTrue(t, waitTimeout, "a heartbeat reaches b", func() bool { return dialsToB.Load() >= from+2 })
	cut.Store(true)
	select {
	case <-lost:
	case <-time.After(waitTimeout):
		t.Fatal("b, reached again, was not evicted when its port refused a")
	}
	// b hears of its eviction from the store, which can be before a has
	// counted it.
	poll.UntilTrue(t, waitTimeout, "the second eviction counted", func() bool { return evictions(t, reg) >= 2 })
	require.Equal(t, 2.0, evictions(t, reg), "evictions of b")
}

// evictions sums yorkie_affinity_evictions_total in reg.
func evictions(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "yorkie_affinity_evictions_total" {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestWitnessSparesPeerCutOffFromOneNode: with a third member to ask, a
// member whose port refuses one node only is not evicted at all: the
// witness reaches it, heartbeat after heartbeat and on a relay's
// suspicion. Once it refuses the witness too (its process is gone), the
// first refusal evicts it.
func TestWitnessSparesPeerCutOffFromOneNode(t *testing.T) {
	st := memory.New(memory.Config{})
	bAddr := answeringAddr(t)
	var cutA, cutC atomic.Bool
	var dialsToB atomic.Int64
	refuses := func(cut *atomic.Bool, count bool) func(ctx context.Context, addr string) error {
		return func(ctx context.Context, addr string) error {
			if addr != bAddr {
				return nil
			}
			if count {
				dialsToB.Add(1)
			}
			if cut.Load() {
				return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
			}
			return nil
		}
	}
	lost := make(chan []string, 1)
	b := start(t, st, affinity.Config{AdvertiseAddr: bAddr, OnLost: func(keys []string) { lost <- keys }})
	c := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), Dial: refuses(&cutC, false)})
	reg := prometheus.NewRegistry()
	a := start(t, st, affinity.Config{AdvertiseAddr: answeringAddr(t), HeartbeatInterval: 10 * time.Millisecond,
		Dial: refuses(&cutA, true), Registerer: reg,
		Witness: func(ctx context.Context, witness, addr string) (bool, error) {
			for _, m := range []*affinity.Manager{b, c} {
				if m.Addr() == witness {
					return m.Reaches(ctx, addr)
				}
			}
			return false, fmt.Errorf("no member %s", witness)
		}})
	waitMembers(t, a, a.Addr(), b.Addr(), c.Addr())
	keyOwnedBy(t, b)

	cutA.Store(true)
	from := dialsToB.Load()
	poll.UntilTrue(t, waitTimeout, "refused heartbeats to b, each put to the witness", func() bool {
		return dialsToB.Load() >= from+10 && counterValue(t, reg, "yorkie_affinity_evictions_vetoed_total") >= 3
	})
	require.False(t, a.Suspect(context.Background(), b.Addr()), "a relay's refusal evicted b")
	require.Zero(t, evictions(t, reg), "evictions of b")
	require.Contains(t, a.Members(), b.Addr())
	select {
	case keys := <-lost:
		t.Fatalf("b lost %v", keys)
	default:
	}

	// b's process is gone: it refuses the witness too.
	cutC.Store(true)
	select {
	case <-lost:
	case <-time.After(waitTimeout):
		t.Fatal("b was not evicted once it refused the witness too")
	}
	poll.UntilTrue(t, waitTimeout, "the eviction counted", func() bool { return evictions(t, reg) >= 1 })
}
