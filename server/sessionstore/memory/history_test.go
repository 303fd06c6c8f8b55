package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// observation is what one call told its caller about a key, and when.
type observation struct {
	key        string
	b          sessionstore.Binding
	bound      bool // false: the key was seen unbound
	start, end time.Time
}

// checkHistory fails t if the observations show a key with two owners: one
// epoch with two owners, a binding reported after a newer one had been
// reported by a call that ended earlier, or a binding reported again after
// the key had been seen unbound.
func checkHistory(t *testing.T, obs []observation) {
	t.Helper()
	byKey := map[string][]observation{}
	for _, o := range obs {
		byKey[o.key] = append(byKey[o.key], o)
	}
	for key, os := range byKey {
		var bound, unbound []observation
		owners := map[int64]sessionstore.Member{}
		for _, o := range os {
			if !o.bound {
				unbound = append(unbound, o)
				continue
			}
			bound = append(bound, o)
			if m, ok := owners[o.b.Epoch]; ok && m != o.b.Owner {
				t.Fatalf("key %s epoch %d has two owners: %+v and %+v", key, o.b.Epoch, m, o.b.Owner)
			}
			owners[o.b.Epoch] = o.b.Owner
		}
		byEnd := func(a, b observation) int { return a.end.Compare(b.end) }
		slices.SortFunc(bound, byEnd)
		slices.SortFunc(unbound, byEnd)
		// seen[i] is the largest epoch reported by bound[0..i].
		seen := make([]int64, len(bound))
		for i, o := range bound {
			seen[i] = o.b.Epoch
			if i > 0 {
				seen[i] = max(seen[i], seen[i-1])
			}
		}
		// maxBefore is the largest epoch reported by calls that ended before at.
		maxBefore := func(at time.Time) int64 {
			n, _ := slices.BinarySearchFunc(bound, at, func(o observation, at time.Time) int {
				if o.end.Before(at) {
					return -1
				}
				return 1
			})
			if n == 0 {
				return 0
			}
			return seen[n-1]
		}
		// gone[i] is the largest epoch known ended because one of
		// unbound[0..i] saw the key unbound after it had been reported.
		gone := make([]int64, len(unbound))
		for i, u := range unbound {
			gone[i] = maxBefore(u.start)
			if i > 0 {
				gone[i] = max(gone[i], gone[i-1])
			}
		}
		for _, c := range bound {
			if m := maxBefore(c.start); c.b.Epoch < m {
				t.Fatalf("key %s: epoch %d (%+v) reported after epoch %d had been", key, c.b.Epoch, c.b.Owner, m)
			}
			n, _ := slices.BinarySearchFunc(unbound, c.start, func(o observation, at time.Time) int {
				if o.end.Before(at) {
					return -1
				}
				return 1
			})
			if n > 0 && c.b.Epoch <= gone[n-1] {
				t.Fatalf("key %s: epoch %d (%+v) reported after the key was seen unbound with epoch %d already reported", key, c.b.Epoch, c.b.Owner, gone[n-1])
			}
		}
	}
}

// Many nodes bind, resolve, release and lose leases at once; what callers
// are told must never show a key with two owners.
func TestHistoryHasOneOwnerPerKey(t *testing.T) {
	s := New(Config{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	const (
		nodes      = 4
		perNode    = 4
		keys       = 6
		runFor     = 700 * time.Millisecond
		ttl        = 300 * time.Millisecond
		expireRate = 0.01
	)
	var mu sync.Mutex
	var obs []observation
	record := func(o observation) {
		mu.Lock()
		obs = append(obs, o)
		mu.Unlock()
	}
	ctx := context.Background()
	stop := time.Now().Add(runFor)
	var wg sync.WaitGroup
	for n := range nodes {
		c := s.Client()
		defer c.Close()
		var lmu sync.Mutex
		lease, err := c.Register(ctx, fmt.Sprintf("n%d:1", n), ttl)
		if err != nil {
			t.Fatal(err)
		}
		current := func() sessionstore.Lease {
			lmu.Lock()
			defer lmu.Unlock()
			select {
			case <-lease.Done():
				l, err := c.Register(ctx, fmt.Sprintf("n%d:1", n), ttl)
				if err != nil {
					t.Errorf("Register: %v", err)
					return lease
				}
				lease = l
			default:
			}
			return lease
		}
		for range perNode {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(rand.Uint64(), uint64(n)))
				for time.Now().Before(stop) {
					key := fmt.Sprintf("doc-%d", rng.IntN(keys))
					l := current()
					start := time.Now()
					switch r := rng.Float64(); {
					case r < expireRate:
						s.ExpireLease(l.Member())
					case r < 0.45:
						b, ok, err := c.Resolve(ctx, key)
						if err != nil {
							t.Errorf("Resolve: %v", err)
							return
						}
						record(observation{key: key, b: b, bound: ok, start: start, end: time.Now()})
					default:
						b, err := c.Bind(ctx, key, l.Member())
						if errors.Is(err, sessionstore.ErrNotMember) {
							continue
						}
						if err != nil {
							t.Errorf("Bind: %v", err)
							return
						}
						record(observation{key: key, b: b, bound: true, start: start, end: time.Now()})
						if b.Owner == l.Member() && rng.IntN(3) == 0 {
							if err := c.Release(ctx, b); err != nil && !errors.Is(err, sessionstore.ErrNotOwner) {
								t.Errorf("Release: %v", err)
								return
							}
						}
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d observations", len(obs))
	if len(obs) < 1000 {
		t.Fatalf("only %d observations; the run did not exercise the store", len(obs))
	}
	checkHistory(t, obs)
}
