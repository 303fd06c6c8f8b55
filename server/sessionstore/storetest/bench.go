package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// benchGoroutines are the concurrency levels every store benchmark runs at:
// one node's single caller, and a busy node's many.
func benchGoroutines() []int { return []int{1, 64} }

// BenchConcurrent runs one sub-benchmark per concurrency level
// ("goroutines=N"). prepare sets up what the level needs and returns the
// operation, which is then called b.N times in total, spread over N
// goroutines, each call with a number unique in the sub-benchmark. The first
// error fails the benchmark.
func BenchConcurrent(b *testing.B, prepare func(b *testing.B, goroutines int) func(ctx context.Context, i int64) error) {
	for _, g := range benchGoroutines() {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			op := prepare(b, g)
			spread(b, g, op)
		})
	}
}

// spread calls op b.N times in total from g goroutines.
func spread(b *testing.B, g int, op func(ctx context.Context, i int64) error) {
	b.Helper()
	ctx := context.Background()
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			for failed.Load() == nil {
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

// benchMember registers the member the benchmarks bind keys to, for longer
// than any run.
func benchMember(b *testing.B, s sessionstore.Store) sessionstore.Member {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := s.Register(ctx, "bench-node:1", time.Minute)
	if err != nil {
		b.Fatalf("Register: %v", err)
	}
	b.Cleanup(func() { _ = l.Revoke(context.Background()) })
	return l.Member()
}

// BenchResolveHit measures Resolve of a live binding, the lookup in front of
// every document call, on s.
func BenchResolveHit(b *testing.B, s sessionstore.Store) {
	owner := benchMember(b, s)
	const keys = 256
	for i := range keys {
		if _, err := s.Bind(context.Background(), fmt.Sprintf("doc-%d", i), owner); err != nil {
			b.Fatalf("Bind: %v", err)
		}
	}
	BenchConcurrent(b, func(*testing.B, int) func(context.Context, int64) error {
		return func(ctx context.Context, i int64) error {
			_, ok, err := s.Resolve(ctx, fmt.Sprintf("doc-%d", i%keys))
			if err == nil && !ok {
				return fmt.Errorf("binding doc-%d missing", i%keys)
			}
			return err
		}
	})
}

// BenchBind measures Bind of a fresh key each time on s: the write path of a
// document's first owner.
func BenchBind(b *testing.B, s sessionstore.Store) {
	owner := benchMember(b, s)
	BenchConcurrent(b, func(_ *testing.B, g int) func(context.Context, int64) error {
		// The prefix keeps keys fresh on a backend that outlives the run.
		prefix := fmt.Sprintf("g%d-%d-", g, time.Now().UnixNano())
		return func(ctx context.Context, i int64) error {
			_, err := s.Bind(ctx, fmt.Sprintf("%s%d", prefix, i), owner)
			return err
		}
	})
}

// BenchRenewal measures renewing leases on s, one lease per goroutine as
// every node renews its own; renew is the store's own single renewal of l,
// which its keepalive runs on a timer.
func BenchRenewal(b *testing.B, s sessionstore.Store, renew func(ctx context.Context, l sessionstore.Lease) error) {
	BenchConcurrent(b, func(b *testing.B, g int) func(context.Context, int64) error {
		leases := make([]sessionstore.Lease, g)
		for i := range leases {
			l, err := s.Register(context.Background(), fmt.Sprintf("bench-renew-%d-%d:1", g, i), time.Minute)
			if err != nil {
				b.Fatalf("Register: %v", err)
			}
			leases[i] = l
			b.Cleanup(func() { _ = l.Revoke(context.Background()) })
		}
		return func(ctx context.Context, i int64) error { return renew(ctx, leases[i%int64(g)]) }
	})
}
