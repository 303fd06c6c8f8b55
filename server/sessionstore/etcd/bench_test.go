package etcd

import (
	"context"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
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
	storetest.BenchRenewal(b, s, func(ctx context.Context, l sessionstore.Lease) error {
		return l.(*lease).renewOnce(ctx)
	})
}
