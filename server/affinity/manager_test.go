package affinity_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
)

// waitTimeout bounds every wait for the managers to notice a change; it only
// ends runs that are already broken.
const waitTimeout = 5 * time.Second

// node starts a manager for addr on a client of the shared store.
func node(t *testing.T, st *memory.Store, addr string, onLost func([]string)) *affinity.Manager {
	t.Helper()
	m, err := affinity.New(affinity.Config{Store: st.Client(), AdvertiseAddr: addr, TTL: 300 * time.Millisecond, OnLost: onLost})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	return m
}

func cluster(t *testing.T, st *memory.Store, n int) []*affinity.Manager {
	ms := make([]*affinity.Manager, n)
	for i := range ms {
		ms[i] = node(t, st, fmt.Sprintf("127.0.0.1:%d", 9001+i), nil)
	}
	for _, m := range ms {
		poll.UntilTrue(t, waitTimeout, "full membership", func() bool { return len(m.Members()) == n })
	}
	return ms
}

func TestAllNodesAgreeOnOneOwner(t *testing.T) {
	ms := cluster(t, memory.New(memory.Config{}), 3)
	ctx := context.Background()
	for d := 0; d < 50; d++ {
		key := fmt.Sprintf("p/doc-%d", d)
		owners := make([]affinity.Owner, len(ms))
		var wg sync.WaitGroup
		for i, m := range ms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, err := m.Owner(ctx, key)
				if err != nil {
					t.Error(err)
				}
				owners[i] = o
			}()
		}
		wg.Wait()
		selfs := 0
		for i, o := range owners {
			if o.Addr != owners[0].Addr || o.Epoch != owners[0].Epoch {
				t.Fatalf("%s: node %d says %+v, node 0 says %+v", key, i, o, owners[0])
			}
			if o.Self {
				selfs++
				if ms[i].Addr() != o.Addr {
					t.Fatalf("node %s claims %s's document", ms[i].Addr(), o.Addr)
				}
			}
			if o.SessionKey != affinity.SessionKey(o.Addr) {
				t.Fatalf("session key %q does not name %s", o.SessionKey, o.Addr)
			}
		}
		if selfs != 1 {
			t.Fatalf("%s: %d nodes think they own it", key, selfs)
		}
	}
}

func TestPlacementSpreadsDocuments(t *testing.T) {
	ms := cluster(t, memory.New(memory.Config{}), 3)
	count := map[string]int{}
	for d := 0; d < 300; d++ {
		o, err := ms[d%3].Owner(context.Background(), fmt.Sprintf("p/spread-%d", d))
		if err != nil {
			t.Fatal(err)
		}
		count[o.Addr]++
	}
	for addr, n := range count {
		if n > 125+1 { // 1.25 x mean of 100
			t.Errorf("%s owns %d of 300 documents", addr, n)
		}
	}
	if len(count) != 3 {
		t.Errorf("documents went to %d of 3 nodes: %v", len(count), count)
	}
}

func TestOwnerHotPathMakesNoStoreCalls(t *testing.T) {
	ms := cluster(t, memory.New(memory.Config{}), 2)
	ctx := context.Background()
	var key string
	var owner *affinity.Manager
	for d := 0; owner == nil; d++ {
		key = fmt.Sprintf("p/hot-%d", d)
		o, err := ms[0].Owner(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if o.Self {
			owner = ms[0]
		}
	}
	before := owner.StoreCalls()
	for i := 0; i < 1000; i++ {
		o, err := owner.Owner(ctx, key)
		if err != nil || !o.Self {
			t.Fatalf("owner lookup %d: %+v, %v", i, o, err)
		}
	}
	if calls := owner.StoreCalls() - before; calls != 0 {
		t.Fatalf("1000 owner lookups made %d session store calls, want 0", calls)
	}
}

func TestCrashedOwnerIsTakenOverWithLargerEpoch(t *testing.T) {
	st := memory.New(memory.Config{})
	lost := make(chan []string, 4)
	a := node(t, st, "127.0.0.1:9101", func(keys []string) { lost <- keys })
	b := node(t, st, "127.0.0.1:9102", nil)
	poll.UntilTrue(t, waitTimeout, "membership", func() bool { return len(b.Members()) == 2 })
	ctx := context.Background()
	// Find a document a owns.
	var key string
	var first affinity.Owner
	for d := 0; ; d++ {
		key = fmt.Sprintf("p/crash-%d", d)
		o, err := a.Owner(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if o.Self {
			first = o
			break
		}
	}
	if o, _ := b.Owner(ctx, key); o.Addr != a.Addr() {
		t.Fatalf("b sees owner %s, want %s", o.Addr, a.Addr())
	}
	// a is partitioned away: its lease ends without renewal.
	st.ExpireLease(storetest.LiveMember(t, st, a.Addr()))
	select {
	case keys := <-lost:
		if len(keys) != 1 || keys[0] != key {
			t.Fatalf("a was told it lost %v, want [%s]", keys, key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a was not told it lost its documents")
	}
	poll.UntilTrue(t, waitTimeout, "b taking over", func() bool {
		o, err := b.Owner(ctx, key)
		return err == nil && o.Epoch > first.Epoch && o.Addr != "" && (o.Self || o.Addr == a.Addr())
	})
	o, _ := b.Owner(ctx, key)
	if o.Epoch <= first.Epoch {
		t.Fatalf("takeover epoch %d not above %d", o.Epoch, first.Epoch)
	}
}

func TestStopReleasesBindingsAtOnce(t *testing.T) {
	st := memory.New(memory.Config{})
	a := node(t, st, "127.0.0.1:9201", nil)
	b := node(t, st, "127.0.0.1:9202", nil)
	poll.UntilTrue(t, waitTimeout, "membership", func() bool { return len(b.Members()) == 2 })
	ctx := context.Background()
	var keys []string
	for d := 0; len(keys) < 5; d++ {
		k := fmt.Sprintf("p/stop-%d", d)
		if o, err := a.Owner(ctx, k); err == nil && o.Self {
			keys = append(keys, k)
		}
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// No waiting for the TTL: the bindings are gone and b can take them now.
	for _, k := range keys {
		if _, ok, err := st.Resolve(ctx, k); err != nil || ok {
			t.Fatalf("binding of %s survived Stop (ok=%v, err=%v)", k, ok, err)
		}
	}
	poll.UntilTrue(t, waitTimeout, "b to see a leave", func() bool { return len(b.Members()) == 1 })
	for _, k := range keys {
		if o, err := b.Owner(ctx, k); err != nil || !o.Self {
			t.Fatalf("after a stopped, %s owned by %+v (%v)", k, o, err)
		}
	}
	if _, err := a.Owner(ctx, "p/after-stop"); err == nil {
		t.Fatal("a stopped manager still resolves owners")
	}
}

func TestTakeoverOfACrashedOwnersDocumentIsCounted(t *testing.T) {
	st := memory.New(memory.Config{})
	a := node(t, st, "127.0.0.1:9301", nil)
	reg := prometheus.NewRegistry()
	b, err := affinity.New(affinity.Config{Store: st.Client(), AdvertiseAddr: "127.0.0.1:9302", TTL: 300 * time.Millisecond, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	poll.UntilTrue(t, waitTimeout, "membership", func() bool { return len(b.Members()) == 2 })
	var key string
	for d := 0; ; d++ {
		key = fmt.Sprintf("p/takeover-%d", d)
		if o, err := a.Owner(ctx, key); err == nil && o.Self {
			break
		}
	}
	if o, err := b.Owner(ctx, key); err != nil || o.Addr != a.Addr() {
		t.Fatalf("b sees owner %+v (%v), want %s", o, err, a.Addr())
	}
	// a crashes: nothing is released, and its lease runs out.
	member := storetest.LiveMember(t, st, a.Addr())
	a.Abandon()
	st.ExpireLease(member)
	poll.UntilTrue(t, waitTimeout, "b to see a leave", func() bool { return len(b.Members()) == 1 })
	if o, err := b.Owner(ctx, key); err != nil || !o.Self {
		t.Fatalf("after a crashed, owner is %+v (%v), want b", o, err)
	}
	if got := counterValue(t, reg, "yorkie_affinity_takeovers_total"); got != 1 {
		t.Fatalf("takeovers = %v, want 1", got)
	}
	// A document nobody owned before is a plain bind, not a takeover.
	if _, err := b.Owner(ctx, "p/never-owned"); err != nil {
		t.Fatal(err)
	}
	if got := counterValue(t, reg, "yorkie_affinity_takeovers_total"); got != 1 {
		t.Fatalf("takeovers = %v after a fresh bind, want 1", got)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestFailedStoreCallsAreCountedAsErrors(t *testing.T) {
	st := memory.New(memory.Config{})
	client := st.Client()
	reg := prometheus.NewRegistry()
	m, err := affinity.New(affinity.Config{Store: client, AdvertiseAddr: "127.0.0.1:9401", TTL: time.Second, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Abandon()
	_ = client.Close() // the store becomes unreachable for this node
	if _, err := m.Owner(ctx, "p/doc"); err == nil {
		t.Fatal("Owner succeeded with a closed store")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var errors float64
	for _, f := range families {
		if f.GetName() != "yorkie_sessionstore_call_seconds" {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == "error" {
					errors += float64(metric.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	if errors == 0 {
		t.Fatal("a failed resolve was not counted with outcome=error")
	}
}

func TestGoneClosesWhenTheMemberLeaves(t *testing.T) {
	st := memory.New(memory.Config{})
	a := node(t, st, "127.0.0.1:9501", nil)
	b := node(t, st, "127.0.0.1:9502", nil)
	poll.UntilTrue(t, waitTimeout, "membership", func() bool { return len(a.Members()) == 2 })
	gone := a.Gone(b.Addr())
	select {
	case <-gone:
		t.Fatal("Gone is closed while the member lives")
	default:
	}
	select {
	case <-a.Gone("127.0.0.1:1"):
	default:
		t.Fatal("Gone of a non-member is not closed")
	}
	st.ExpireLease(storetest.LiveMember(t, st, b.Addr()))
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("Gone not closed after the member's lease ended")
	}
}
