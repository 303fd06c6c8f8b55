package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	storetest.BenchConcurrent(b, func(b *testing.B, g int) func(context.Context, int64) error {
		leases := make([]*lease, g)
		for i := range leases {
			l, err := s.Register(context.Background(), fmt.Sprintf("n%d:1", i), time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			leases[i] = l.(*lease)
			b.Cleanup(func() { _ = l.Revoke(context.Background()) })
		}
		return func(_ context.Context, i int64) error {
			if !leases[i%int64(g)].renewOnce() {
				return errors.New("renewal failed")
			}
			return nil
		}
	})
}

var _ sessionstore.Store = (*Store)(nil)
