package memory

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// run calls body b.N times from the given number of goroutines; body gets a
// number unique across goroutines.
func run(b *testing.B, goroutines int, body func(i int64)) {
	var n atomic.Int64
	if goroutines == 1 {
		for b.Loop() {
			body(n.Add(1))
		}
		return
	}
	// RunParallel starts parallelism * GOMAXPROCS goroutines.
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body(n.Add(1))
		}
	})
}

var goroutineCounts = []int{1, 64}

func BenchmarkResolveHit(b *testing.B) {
	s := New(Config{})
	defer s.Close()
	ctx := context.Background()
	l, err := s.Register(ctx, "a:1", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	const keys = 1024
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("doc-%d", i)
		if _, err := s.Bind(ctx, names[i], l.Member()); err != nil {
			b.Fatal(err)
		}
	}
	for _, g := range goroutineCounts {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			run(b, g, func(i int64) {
				if _, ok, err := s.Resolve(ctx, names[i%keys]); err != nil || !ok {
					b.Fatalf("Resolve: ok=%v err=%v", ok, err)
				}
			})
		})
	}
}

func BenchmarkBind(b *testing.B) {
	s := New(Config{})
	defer s.Close()
	ctx := context.Background()
	l, err := s.Register(ctx, "a:1", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	for _, g := range goroutineCounts {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			prefix := fmt.Sprintf("g%d-", g)
			run(b, g, func(i int64) {
				if _, err := s.Bind(ctx, prefix+strconv.FormatInt(i, 10), l.Member()); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkLeaseRenewal(b *testing.B) {
	s := New(Config{})
	defer s.Close()
	ctx := context.Background()
	for _, g := range goroutineCounts {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			leases := make([]*lease, g)
			for i := range leases {
				l, err := s.Register(ctx, fmt.Sprintf("n%d:1", i), time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				leases[i] = l.(*lease)
				defer l.Revoke(ctx)
			}
			run(b, g, func(i int64) {
				if !leases[i%int64(g)].renewOnce() {
					b.Fatal("renewal failed")
				}
			})
		})
	}
}

var _ sessionstore.Store = (*Store)(nil)
