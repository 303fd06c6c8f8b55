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
