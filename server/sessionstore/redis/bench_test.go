package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

func benchStore(b *testing.B) *Store { return newTestStore(b, testenv.StartRedis(b).Addr, Config{}) }

// BenchmarkResolveHit resolves a live binding (one EVALSHA reading the
// binding and its owner's registration).
func BenchmarkResolveHit(b *testing.B) { storetest.BenchResolveHit(b, benchStore(b)) }

// BenchmarkBind binds a fresh key each time (the compare-and-set takes the
// write path: INCR for the epoch, then HSET).
func BenchmarkBind(b *testing.B) { storetest.BenchBind(b, benchStore(b)) }

// BenchmarkRenew renews a lease (what each node does every TTL/3).
func BenchmarkRenew(b *testing.B) {
	s := benchStore(b)
	storetest.BenchRenewal(b, s, func(ctx context.Context, l sessionstore.Lease) error {
		ok, err := s.renew(ctx, l.Member(), time.Minute)
		if err == nil && !ok {
			return errors.New("lease lost")
		}
		return err
	})
}
