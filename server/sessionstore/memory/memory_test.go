package memory

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
)

func TestConformance(t *testing.T) {
	shared := New(Config{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { _ = shared.Close() })
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) sessionstore.Store {
			c := shared.Client()
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
		TTL: time.Second,
		Expire: func(t *testing.T, _ sessionstore.Store, l sessionstore.Lease) {
			shared.ExpireLease(l.Member())
		},
	})
}

// A client that closes stops renewing: its leases run out after their TTL,
// not before, and other clients see that.
func TestClosedClientLeasesRunOut(t *testing.T) {
	shared := New(Config{Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	c1, c2 := shared.Client(), shared.Client()
	defer c2.Close()
	const ttl = 300 * time.Millisecond
	// The lease's first deadline is TTL after a moment inside Register, and
	// renewals only push it later: whatever the scheduler does, the lease
	// cannot end sooner than TTL after this instant. A slow machine makes
	// the measured span longer, never shorter.
	registering := time.Now()
	l, err := c1.Register(ctx, "a:1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Bind(ctx, "doc", l.Member()); err != nil {
		t.Fatal(err)
	}
	closedAt := time.Now()
	_ = c1.Close()
	select {
	case <-l.Done():
		if lived := time.Since(registering); lived < ttl {
			t.Fatalf("lease ended %v after Register, before its TTL %v", lived, ttl)
		}
		t.Logf("lease ended %v after Close (TTL %v)", time.Since(closedAt).Round(time.Millisecond), ttl)
	case <-time.After(30 * time.Second): // a hang guard, not a claim on when
		t.Fatalf("lease of a closed client did not run out")
	}
	if b, ok, err := c2.Resolve(ctx, "doc"); err != nil || ok {
		t.Fatalf("Resolve after run-out = %+v, %v, %v; want none", b, ok, err)
	}
}

// A lease whose renewal is late is dead for readers even before the renewer
// notices, and the late renewal does not revive it.
func TestLateRenewalDoesNotRevive(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	ctx := context.Background()
	li, err := s.Register(ctx, "a:1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	l := li.(*lease)
	if _, err := s.Bind(ctx, "doc", l.member); err != nil {
		t.Fatal(err)
	}
	l.deadline.Store(s.now() - int64(time.Millisecond))
	if b, ok, _ := s.Resolve(ctx, "doc"); ok {
		t.Fatalf("binding of a lease past its deadline resolves: %+v", b)
	}
	if l.renewOnce() {
		t.Fatalf("renewal after the deadline succeeded")
	}
	if _, ok, _ := s.Resolve(ctx, "doc"); ok {
		t.Fatalf("late renewal revived the binding")
	}
}

// TestEpochsGrowAcrossRestarts: a restarted process has a new store, but the
// database still remembers the epochs that claimed its documents, so the new
// store's epochs must be larger than the old one's.
func TestEpochsGrowAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	bind := func(st *Store) sessionstore.Binding {
		t.Helper()
		l, err := st.Register(ctx, "127.0.0.1:7001", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 { // an old process has drawn many epochs
			b, err := st.Bind(ctx, "doc", l.Member())
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Release(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		b, err := st.Bind(ctx, "doc", l.Member())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := New(Config{})
	old := bind(before)
	_ = before.Close()
	restarted := New(Config{})
	defer restarted.Close()
	if b := bind(restarted); b.Epoch <= old.Epoch {
		t.Fatalf("epoch %d after a restart, not above %d", b.Epoch, old.Epoch)
	}
}
