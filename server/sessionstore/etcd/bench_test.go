package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

func benchStore(b *testing.B) *Store { return newStore(b, testenv.StartEtcd(b), testPrefix(b)) }

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
		return func(ctx context.Context, i int64) error { return leases[i%int64(g)].renewOnce(ctx) }
	})
}
