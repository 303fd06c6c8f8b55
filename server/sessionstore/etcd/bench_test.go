package etcd

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// benchGoroutines are the concurrency levels every benchmark runs at.
var benchGoroutines = []int{1, 64}

// parallel calls body b.N times in total from the given number of
// goroutines; body gets a number unique across goroutines.
func parallel(b *testing.B, goroutines int, body func(i int64)) {
	var n atomic.Int64
	if goroutines == 1 {
		for b.Loop() {
			body(n.Add(1))
		}
		return
	}
	// RunParallel starts parallelism * GOMAXPROCS goroutines.
	b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body(n.Add(1))
		}
	})
}

func BenchmarkResolveHit(b *testing.B) {
	s := newStore(b, testenv.StartEtcd(b), testPrefix(b))
	ctx := context.Background()
	l, err := s.Register(ctx, "a:1", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	const keys = 256
	for i := range keys {
		if _, err := s.Bind(ctx, fmt.Sprintf("doc-%d", i), l.Member()); err != nil {
			b.Fatal(err)
		}
	}
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			parallel(b, g, func(i int64) {
				if _, ok, err := s.Resolve(ctx, fmt.Sprintf("doc-%d", i%keys)); err != nil || !ok {
					b.Fatalf("Resolve: ok=%v err=%v", ok, err)
				}
			})
		})
	}
}

func BenchmarkBind(b *testing.B) {
	s := newStore(b, testenv.StartEtcd(b), testPrefix(b))
	ctx := context.Background()
	l, err := s.Register(ctx, "a:1", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			// Every Bind is of a new key: the write path of a first owner.
			prefix := fmt.Sprintf("g%d-%d-", g, time.Now().UnixNano())
			parallel(b, g, func(i int64) {
				if _, err := s.Bind(ctx, fmt.Sprintf("%s%d", prefix, i), l.Member()); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkLeaseRenewal(b *testing.B) {
	s := newStore(b, testenv.StartEtcd(b), testPrefix(b))
	ctx := context.Background()
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			leases := make([]*lease, g)
			for i := range leases {
				l, err := s.Register(ctx, fmt.Sprintf("n%d:1", i), time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				leases[i] = l.(*lease)
				b.Cleanup(func() { _ = l.Revoke(context.Background()) })
			}
			parallel(b, g, func(i int64) {
				if err := leases[i%int64(g)].renewOnce(ctx); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
