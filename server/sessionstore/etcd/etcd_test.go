package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// testPrefix returns a key prefix of its own for one test.
func testPrefix(t testing.TB) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	return "/yorkie-test-" + hex.EncodeToString(b[:]) + "/"
}

func newStore(t testing.TB, endpoints []string, prefix string) *Store {
	t.Helper()
	s, err := New(Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Prefix: prefix})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	endpoints := testenv.StartEtcd(t)
	prefix := testPrefix(t)
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) sessionstore.Store { return newStore(t, endpoints, prefix) },
		TTL: 2 * time.Second,
		// Stopping renewal is what a partitioned node does: etcd expires the
		// lease by itself once the TTL has passed.
		Expire: func(t *testing.T, _ sessionstore.Store, l sessionstore.Lease) {
			l.(*lease).stopRenewal()
		},
	})
}

// A member watch that fell behind a compaction lists the members again and
// ends up with the current set.
func TestMemberWatchRelistsAfterCompaction(t *testing.T) {
	s := newStore(t, testenv.StartEtcd(t), testPrefix(t))
	ctx := t.Context()
	a, err := s.Register(ctx, "a:1", 10*time.Second)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	_, rev, err := s.listMembers(ctx)
	if err != nil {
		t.Fatalf("list members: %v", err)
	}
	b, err := s.Register(ctx, "b:1", 10*time.Second)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	if err := a.Revoke(ctx); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	now, err := s.cli.Get(ctx, "any")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if _, err := s.cli.Compact(ctx, now.Header.Revision); err != nil {
		t.Fatalf("Compact: %v", err)
	}

	// The view still holds the state at rev, which etcd no longer has.
	view := &memberView{byKey: map[string]sessionstore.Member{s.memberKey(a.Member()): a.Member()}, wake: make(chan struct{}, 1)}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.followMembers(fctx, view, rev)

	deadline := time.After(10 * time.Second)
	for {
		got := view.snapshot()
		if len(got) == 1 && got[0] == b.Member() {
			return
		}
		select {
		case <-view.wake:
		case <-deadline:
			t.Fatalf("member view after compaction = %+v, want only %+v", got, b.Member())
		}
	}
}
