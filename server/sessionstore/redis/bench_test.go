package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// benchConcurrency is the number of goroutines each benchmark runs with.
var benchConcurrency = []int{1, 64}

// runSpread runs op b.N times in total, spread over g goroutines.
func runSpread(b *testing.B, g int, op func(ctx context.Context, i int64) error) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := op(ctx, i); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatalf("operation failed: %v", *err)
	}
}

func benchStore(b *testing.B) (*Store, sessionstore.Member) {
	b.Helper()
	r := testenv.StartRedis(b)
	s := newTestStore(b, r.Addr, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := s.Register(ctx, "bench-node:1", time.Minute)
	if err != nil {
		b.Fatalf("Register: %v", err)
	}
	return s, l.Member()
}

// BenchmarkResolveHit resolves a live binding (one EVALSHA reading the
// binding and its owner's registration).
func BenchmarkResolveHit(b *testing.B) {
	s, owner := benchStore(b)
	const keys = 1024
	for i := range keys {
		if _, err := s.Bind(context.Background(), fmt.Sprintf("doc-%d", i), owner); err != nil {
			b.Fatalf("Bind: %v", err)
		}
	}
	for _, g := range benchConcurrency {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			runSpread(b, g, func(ctx context.Context, i int64) error {
				_, ok, err := s.Resolve(ctx, fmt.Sprintf("doc-%d", i%keys))
				if err == nil && !ok {
					return fmt.Errorf("binding doc-%d missing", i%keys)
				}
				return err
			})
		})
	}
}

// BenchmarkBind binds a fresh key each time (the compare-and-set takes the
// write path: INCR for the epoch, then HSET).
func BenchmarkBind(b *testing.B) {
	s, owner := benchStore(b)
	var runs atomic.Int64
	for _, g := range benchConcurrency {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			prefix := fmt.Sprintf("run%d-", runs.Add(1))
			runSpread(b, g, func(ctx context.Context, i int64) error {
				_, err := s.Bind(ctx, fmt.Sprintf("%s%d", prefix, i), owner)
				return err
			})
		})
	}
}

// BenchmarkRenew renews a lease (what each node does every TTL/3).
func BenchmarkRenew(b *testing.B) {
	s, owner := benchStore(b)
	for _, g := range benchConcurrency {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			runSpread(b, g, func(ctx context.Context, i int64) error {
				ok, err := s.renew(ctx, owner, time.Minute)
				if err == nil && !ok {
					return fmt.Errorf("lease lost")
				}
				return err
			})
		})
	}
}
