package redis

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// newTestStore connects a store to r and closes it when t ends.
func newTestStore(t testing.TB, addr string, cfg Config) *Store {
	t.Helper()
	cfg.Addr = addr
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// expireByDelete deletes the lease's member key through a raw connection, as
// if the key had expired while its node was partitioned away.
func expireByDelete(r *testenv.Redis, prefix string) func(t *testing.T, s sessionstore.Store, l sessionstore.Lease) {
	return func(t *testing.T, s sessionstore.Store, l sessionstore.Lease) {
		t.Helper()
		key := prefix + "member:" + memberID(l.Member())
		if n := r.MustCommand(t, "DEL", key); n != "1" {
			t.Fatalf("DEL %s = %s, want 1", key, n)
		}
	}
}

func TestConformance(t *testing.T) {
	r := testenv.StartRedis(t)
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) sessionstore.Store {
			return newTestStore(t, r.Addr, Config{})
		},
		TTL:    time.Second,
		Expire: expireByDelete(r, DefaultPrefix),
	})
}

// TestConformanceWithConn runs the suite with every command on the pool's
// exclusive path (radix.WithConn) and a custom prefix.
func TestConformanceWithConn(t *testing.T) {
	r := testenv.StartRedis(t)
	const prefix = "other-cluster/"
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) sessionstore.Store {
			s := newTestStore(t, r.Addr, Config{Prefix: prefix})
			s.viaWithConn = true
			return s
		},
		TTL:    time.Second,
		Expire: expireByDelete(r, prefix),
	})
}

// TestWatchSeesJoinAndLeaveThroughPubSub sets a re-read interval far longer
// than the test: joins and revocations must still arrive, through the
// pub/sub channel.
func TestWatchSeesJoinAndLeaveThroughPubSub(t *testing.T) {
	r := testenv.StartRedis(t)
	watcher := newTestStore(t, r.Addr, Config{WatchInterval: time.Hour})
	node := newTestStore(t, r.Addr, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := watcher.WatchMembers(ctx)
	if err != nil {
		t.Fatalf("WatchMembers: %v", err)
	}
	expect := func(want sessionstore.MemberEvent) {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed, want %+v", want)
			}
			if ev != want {
				t.Fatalf("event %+v, want %+v", ev, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no event within 5s, want %+v", want)
		}
	}
	// The subscription may be set up after the first registration is
	// published; a fresh subscription re-reads the members, so the join is
	// reported either way.
	l, err := node.Register(ctx, "node-a:1", time.Minute)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	expect(sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: l.Member()})
	l2, err := node.Register(ctx, "node-b:1", time.Minute)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	expect(sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: l2.Member()})
	if err := l.Revoke(ctx); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	expect(sessionstore.MemberEvent{Type: sessionstore.MemberLeft, Member: l.Member()})
}

// TestCloseEndsLeasesAndWatches: a closed store can renew nothing, so its
// leases end at once, and its watches close.
func TestCloseEndsLeasesAndWatches(t *testing.T) {
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{})
	ctx := ctxT(t)
	l, err := s.Register(ctx, "node-a:1", time.Minute)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	ch, err := s.WatchMembers(ctx)
	if err != nil {
		t.Fatalf("WatchMembers: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatalf("lease Done still open after Close returned")
	}
	for range ch {
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestRedactAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:6379":                "127.0.0.1:6379",
		"redis://:secret@host:6379/2":   "redis://***@host:6379/2",
		"redis://user:secret@host:6379": "redis://***@host:6379",
		"redis://host:6379":             "redis://host:6379",
	} {
		if got := redactAddr(in); got != want {
			t.Errorf("redactAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEpochsGrowAfterCounterLoss: a failover can lose the counter's last
// increments (asynchronous replication). Epochs must still grow, or the
// database would fence out the document's next owner for good.
func TestEpochsGrowAfterCounterLoss(t *testing.T) {
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{})
	ctx := context.Background()
	l, err := s.Register(ctx, "127.0.0.1:7001", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Bind(ctx, "doc", l.Member())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The replica that took over had seen an early counter value.
	r.MustCommand(t, "SET", DefaultPrefix+"counter", "0")
	l2, err := s.Register(ctx, "127.0.0.1:7002", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l2.Member().Incarnation <= l.Member().Incarnation {
		t.Fatalf("incarnation %d after the loss, not above %d", l2.Member().Incarnation, l.Member().Incarnation)
	}
	second, err := s.Bind(ctx, "doc", l2.Member())
	if err != nil {
		t.Fatal(err)
	}
	if second.Epoch <= first.Epoch {
		t.Fatalf("epoch %d after the counter was lost, not above %d", second.Epoch, first.Epoch)
	}
}
