package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
)

func benchStore(b *testing.B) *Store {
	s := New(Config{})
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func BenchmarkResolveHit(b *testing.B) { storetest.BenchResolveHit(b, benchStore(b)) }

func BenchmarkBind(b *testing.B) { storetest.BenchBind(b, benchStore(b)) }

// BenchmarkLeaseRenewal renews one lease per goroutine, as every node does
// for its own.
func BenchmarkLeaseRenewal(b *testing.B) {
	s := benchStore(b)
	storetest.BenchRenewal(b, s, func(_ context.Context, l sessionstore.Lease) error {
		if !l.(*lease).renewOnce() {
			return errors.New("renewal failed")
		}
		return nil
	})
}

var _ sessionstore.Store = (*Store)(nil)
