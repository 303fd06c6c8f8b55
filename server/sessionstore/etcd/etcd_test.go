package etcd

import (
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
