package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	storetest.BenchConcurrent(b, func(b *testing.B, g int) func(context.Context, int64) error {
		l, err := s.Register(context.Background(), fmt.Sprintf("bench-renew-%d:1", g), time.Minute)
		if err != nil {
			b.Fatalf("Register: %v", err)
		}
		b.Cleanup(func() { _ = l.Revoke(context.Background()) })
		return func(ctx context.Context, _ int64) error {
			ok, err := s.renew(ctx, l.Member(), time.Minute)
			if err == nil && !ok {
				return errors.New("lease lost")
			}
			return err
		}
	})
}
