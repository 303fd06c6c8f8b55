package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// observation is one thing a node was told about a key.
type observation struct {
	node       int
	key        string
	start, end time.Time
	b          sessionstore.Binding
	// owned: the node was told it owns the binding; heldUntil is when it
	// stopped believing so (release started or its lease ended).
	owned     bool
	heldUntil time.Time
}

// history collects what every node was told.
type history struct {
	mu     sync.Mutex
	obs    []observation
	doneAt map[sessionstore.Member]time.Time
}

func (h *history) add(o observation) {
	h.mu.Lock()
	h.obs = append(h.obs, o)
	h.mu.Unlock()
}

func (h *history) leaseEnded(m sessionstore.Member, at time.Time) {
	h.mu.Lock()
	h.doneAt[m] = at
	h.mu.Unlock()
}

// node runs Bind / Resolve / Release on random keys in a loop, as a server
// would, re-registering whenever its lease ends.
type node struct {
	id    int
	store *Store
	keys  []string
	hist  *history
	ttl   time.Duration
}

func (n *node) register(ctx context.Context) (sessionstore.Lease, error) {
	for {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		l, err := n.store.Register(rctx, fmt.Sprintf("node-%d:1", n.id), n.ttl)
		cancel()
		if err == nil {
			go func() {
				<-l.Done()
				n.hist.leaseEnded(l.Member(), time.Now())
			}()
			return l, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, sessionstore.ErrUnavailable) {
			return nil, err
		}
	}
}

// run works until ctx ends; it returns an error only for answers the
// contract does not allow.
func (n *node) run(ctx context.Context, successes func(start time.Time)) error {
	rng := rand.New(rand.NewPCG(uint64(n.id), 7))
	l, err := n.register(ctx)
	if err != nil {
		return ignoreEnd(ctx, err)
	}
	for ctx.Err() == nil {
		select {
		case <-l.Done():
			if l, err = n.register(ctx); err != nil {
				return ignoreEnd(ctx, err)
			}
		default:
		}
		key := n.keys[rng.IntN(len(n.keys))]
		me := l.Member()

		start := time.Now()
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		b, err := n.store.Bind(octx, key, me)
		cancel()
		end := time.Now()
		switch {
		case err == nil:
		case errors.Is(err, sessionstore.ErrUnavailable), errors.Is(err, sessionstore.ErrNotMember), ctx.Err() != nil:
			continue
		default:
			return fmt.Errorf("node %d: Bind(%s): %w", n.id, key, err)
		}
		successes(start)
		o := observation{node: n.id, key: key, start: start, end: end, b: b}
		if b.Owner != me {
			n.hist.add(o)
			// Ask again, as a node routing a later call for the key would.
			start = time.Now()
			octx, cancel = context.WithTimeout(ctx, 2*time.Second)
			rb, ok, err := n.store.Resolve(octx, key)
			cancel()
			switch {
			case err == nil && ok:
				n.hist.add(observation{node: n.id, key: key, start: start, end: time.Now(), b: rb})
			case err == nil, errors.Is(err, sessionstore.ErrUnavailable), ctx.Err() != nil:
			default:
				return fmt.Errorf("node %d: Resolve(%s): %w", n.id, key, err)
			}
			continue
		}
		o.owned = true
		// Serve the document for a moment, unless the lease ends.
		select {
		case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
		case <-l.Done():
		case <-ctx.Done():
		}
		o.heldUntil = time.Now()
		n.hist.add(o)

		octx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		err = n.store.Release(octx, b)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, sessionstore.ErrUnavailable), errors.Is(err, sessionstore.ErrNotOwner):
		default:
			return fmt.Errorf("node %d: Release(%+v): %w", n.id, b, err)
		}
	}
	return nil
}

// ignoreEnd drops err if it only says that the run was over.
func ignoreEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// TestClusterLeaderLoss runs nodes binding, resolving and releasing a few
// keys against a three-member etcd, kills the etcd leader mid-run and checks
// that the nodes get going again and that no key ever had two owners.
//
// With a 2 s TTL the nodes' leases usually end during the election and the
// nodes register again; with 5 s they survive it and so do their bindings.
func TestClusterLeaderLoss(t *testing.T) {
	for _, ttl := range []time.Duration{2 * time.Second, 5 * time.Second} {
		t.Run(fmt.Sprintf("ttl=%v", ttl), func(t *testing.T) { testClusterLeaderLoss(t, ttl) })
	}
}

func testClusterLeaderLoss(t *testing.T, ttl time.Duration) {
	cl := testenv.StartEtcdCluster(t, 3)
	prefix := testPrefix(t)
	const nodes = 4
	keys := []string{"doc-a", "doc-b", "doc-c"}
	hist := &history{doneAt: make(map[sessionstore.Member]time.Time)}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var (
		mu       sync.Mutex
		killedAt time.Time
		after    = make(map[int]int) // successful Binds started after the kill, per node
		total    int
	)
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	for i := range nodes {
		n := &node{id: i, store: newStore(t, cl.Endpoints, prefix), keys: keys, hist: hist, ttl: ttl}
		wg.Go(func() {
			err := n.run(ctx, func(start time.Time) {
				mu.Lock()
				total++
				if !killedAt.IsZero() && start.After(killedAt) {
					after[n.id]++
				}
				mu.Unlock()
			})
			if err != nil {
				errs <- err
				cancel()
			}
		})
	}

	waitFor := func(d time.Duration, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				cancel()
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				t.Fatalf("%s: not within %v", what, d)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor(20*time.Second, "nodes bind before the leader is killed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total >= 50
	})

	kctx, kcancel := context.WithTimeout(ctx, 10*time.Second)
	leader, err := cl.KillLeader(kctx)
	kcancel()
	if err != nil {
		t.Fatalf("kill leader: %v", err)
	}
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	t.Logf("killed etcd leader %s", cl.Members[leader].Name)

	waitFor(30*time.Second, "every node binds again after the leader was killed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range nodes {
			if after[i] < 10 {
				return false
			}
		}
		return true
	})
	resumed := time.Since(killedAt)
	stopped := time.Now()
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	hist.mu.Lock()
	lost := 0
	for _, at := range hist.doneAt {
		if at.Before(stopped) {
			lost++
		}
	}
	hist.mu.Unlock()
	t.Logf("%d successful binds; every node had 10 more %v after the kill; %d leases ended during the run",
		total, resumed.Round(time.Millisecond), lost)
	for _, v := range historyViolations(hist) {
		t.Error(v)
	}
}

// historyViolations lists where the history shows two owners for one key at
// once, one epoch with two owners, or an epoch going backwards in real time.
func historyViolations(h *history) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var bad []string

	type keyEpoch struct {
		key   string
		epoch int64
	}
	owners := make(map[keyEpoch]sessionstore.Member)
	byKey := make(map[string][]observation)
	for _, o := range h.obs {
		ke := keyEpoch{o.key, o.b.Epoch}
		if m, ok := owners[ke]; ok && m != o.b.Owner {
			bad = append(bad, fmt.Sprintf("key %s epoch %d has two owners: %+v and %+v", o.key, o.b.Epoch, m, o.b.Owner))
		}
		owners[ke] = o.b.Owner
		byKey[o.key] = append(byKey[o.key], o)
	}

	for key, obs := range byKey {
		// Epochs never go backwards between calls that did not overlap.
		sort.Slice(obs, func(i, j int) bool { return obs[i].start.Before(obs[j].start) })
		for i, a := range obs {
			for _, b := range obs[i+1:] {
				if a.end.Before(b.start) && b.b.Epoch < a.b.Epoch {
					bad = append(bad, fmt.Sprintf("key %s: epoch went back from %d (node %d, told at %v) to %d (node %d, asked at %v)",
						key, a.b.Epoch, a.node, a.end, b.b.Epoch, b.node, b.start))
				}
			}
		}
		// Two nodes never believed at the same time that they own the key.
		var held []observation
		for _, o := range obs {
			if !o.owned {
				continue
			}
			until := o.heldUntil
			if d, ok := h.doneAt[o.b.Owner]; ok && d.Before(until) {
				until = d
			}
			o.heldUntil = until
			held = append(held, o)
		}
		for i, a := range held {
			for _, b := range held[i+1:] {
				if a.b.Owner == b.b.Owner {
					continue
				}
				if a.end.Before(b.heldUntil) && b.end.Before(a.heldUntil) {
					bad = append(bad, fmt.Sprintf("key %s owned twice at once: node %d epoch %d [%v, %v] and node %d epoch %d [%v, %v]",
						key, a.node, a.b.Epoch, a.end, a.heldUntil, b.node, b.b.Epoch, b.end, b.heldUntil))
				}
			}
		}
	}
	if len(h.obs) == 0 {
		bad = append(bad, "empty history")
	}
	return bad
}

// The checker must catch what it is there to catch.
func TestHistoryViolations(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a := sessionstore.Member{Addr: "a:1", Incarnation: 1}
	b := sessionstore.Member{Addr: "b:1", Incarnation: 2}
	owned := func(node int, m sessionstore.Member, epoch int64, from, until int) observation {
		return observation{node: node, key: "k", start: at(from - 1), end: at(from),
			b: sessionstore.Binding{Key: "k", Owner: m, Epoch: epoch}, owned: true, heldUntil: at(until)}
	}
	seen := func(node int, m sessionstore.Member, epoch int64, from int) observation {
		return observation{node: node, key: "k", start: at(from - 1), end: at(from),
			b: sessionstore.Binding{Key: "k", Owner: m, Epoch: epoch}}
	}
	for _, tc := range []struct {
		name   string
		obs    []observation
		doneAt map[sessionstore.Member]time.Time
		bad    bool
	}{
		{name: "handover", obs: []observation{owned(0, a, 5, 10, 20), owned(1, b, 7, 30, 40), seen(0, b, 7, 35)}},
		{name: "overlap", obs: []observation{owned(0, a, 5, 10, 50), owned(1, b, 7, 30, 40)}, bad: true},
		{name: "overlap after the lease ended", obs: []observation{owned(0, a, 5, 10, 50), owned(1, b, 7, 30, 40)},
			doneAt: map[sessionstore.Member]time.Time{a: at(25)}},
		{name: "one epoch two owners", obs: []observation{seen(0, a, 5, 10), seen(1, b, 5, 30)}, bad: true},
		{name: "epoch back", obs: []observation{seen(0, a, 7, 10), seen(1, b, 5, 30)}, bad: true},
		{name: "empty", bad: true},
	} {
		h := &history{obs: tc.obs, doneAt: tc.doneAt}
		if h.doneAt == nil {
			h.doneAt = map[sessionstore.Member]time.Time{}
		}
		if got := historyViolations(h); (len(got) > 0) != tc.bad {
			t.Errorf("%s: violations %q, want some: %v", tc.name, got, tc.bad)
		}
	}
}

// TestUnreachableStore checks that calls to a dead etcd fail with
// ErrUnavailable instead of hanging, and that the lease ends (Done) once it
// could not be renewed. How soon is measured by the failover benchmarks, not
// asserted here: on a busy machine any bound would be a guess.
func TestUnreachableStore(t *testing.T) {
	cl := testenv.StartEtcdCluster(t, 1)
	s := newStore(t, cl.Endpoints, testPrefix(t))
	ctx := t.Context()
	l, err := s.Register(ctx, "a:1", 2*time.Second)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	b, err := s.Bind(ctx, "doc", l.Member())
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}

	cl.Members[0].Process.Kill()

	for name, call := range map[string]func(context.Context) error{
		"Resolve": func(ctx context.Context) error { _, _, err := s.Resolve(ctx, "doc"); return err },
		"Bind":    func(ctx context.Context) error { _, err := s.Bind(ctx, "doc-2", l.Member()); return err },
		"Release": func(ctx context.Context) error { return s.Release(ctx, b) },
		"Members": func(ctx context.Context) error { _, err := s.Members(ctx); return err },
	} {
		// The call ends by its deadline or earlier, when the dead member's
		// connection is reset; either way it must say the store is down.
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := call(cctx)
		cancel()
		if !errors.Is(err, sessionstore.ErrUnavailable) {
			t.Errorf("%s against a dead etcd = %v, want ErrUnavailable", name, err)
		}
	}

	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatalf("lease Done not closed after etcd died (TTL 2s)")
	}
	// The lease has ended, so revoking it succeeds (the contract makes Revoke
	// idempotent), even though etcd cannot be told.
	rctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := l.Revoke(rctx); err != nil {
		t.Errorf("Revoke of a lost lease = %v, want nil", err)
	}
}

// TestLeaseRevokedElsewhere checks that a lease deleted behind the node's
// back (by an operator, or expired during a partition) closes Done: the
// store notices on its own; how long that took is logged.
func TestLeaseRevokedElsewhere(t *testing.T) {
	endpoints := testenv.StartEtcd(t)
	s := newStore(t, endpoints, testPrefix(t))
	ctx := t.Context()
	l, err := s.Register(ctx, "a:1", 3*time.Second)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	raw, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("raw client: %v", err)
	}
	defer raw.Close()
	if _, err := raw.Revoke(ctx, clientv3.LeaseID(l.Member().Incarnation)); err != nil {
		t.Fatalf("revoke through a raw client: %v", err)
	}
	revoked := time.Now()
	select {
	case <-l.Done():
		t.Logf("Done closed %v after the lease was revoked elsewhere", time.Since(revoked).Round(time.Millisecond))
	case <-time.After(30 * time.Second): // a hang guard; how soon is logged above
		t.Fatalf("Done not closed 30s after the lease was revoked elsewhere")
	}
	if _, err := s.Bind(ctx, "doc", l.Member()); !errors.Is(err, sessionstore.ErrNotMember) {
		t.Fatalf("Bind to the revoked lease's member = %v, want ErrNotMember", err)
	}
}
