// Package storetest is the conformance suite that every sessionstore.Store
// implementation runs: it checks the guarantees listed in the sessionstore
// package comment against a real backend.
//
// A store's test calls Run with a Config:
//
//   - New returns a new client connected to the same backend on every call;
//     the suite uses several clients as several nodes. The suite closes every
//     client it gets (Close may be called twice).
//   - TTL is the lease TTL the suite registers with; use the smallest the
//     backend renews reliably on a loaded machine (memory and Redis 1s,
//     etcd 2s). A lease that is not renewed must end; the suite waits for
//     that up to 2*TTL + 30s, a guard against a hang, not a claim on when.
//   - Expire makes the backend stop renewing a lease registered on client s,
//     so that it ends as when its node is partitioned from the store: at
//     once or when its TTL runs out. It must not go through Lease.Revoke,
//     and it should leave the rest of s usable. When Expire is nil, the
//     subtests that need it skip.
//     What is honest per backend: the memory store calls its fault-injection
//     hook (Store.ExpireLease, which ends the lease at once); the etcd store
//     stops the lease's keepalive and lets the server expire it, rather than
//     revoking it, which would test Revoke a second time; the Redis test
//     deletes the member key through a connection of its own, as if its TTL
//     had run out while the node was cut off, and the store's next renewal
//     finds it gone and ends the lease. The suite then
//     waits for Done closed, the member gone from Members
//     and reported as MemberLeft, and its bindings free for takeover with a
//     larger epoch.
//
// Subtests use their own key and address namespace, so they do not see each
// other's data even on a backend that outlives the test. Members and watches
// are filtered to the subtest's namespace for the same reason.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Config says how to run the suite against one store implementation.
type Config struct {
	// New returns a fresh store client connected to the same backend each call (several clients = several nodes).
	New func(t *testing.T) sessionstore.Store
	// TTL is the lease TTL the suite uses (the smallest the backend renews reliably under load: memory and redis 1s, etcd 2s).
	TTL time.Duration
	// Expire ends lease l, registered through client s, as the backend ends
	// the lease of a node partitioned away: at once, or once its TTL runs
	// out (see the package comment). Optional: the subtests that need it
	// skip when it is nil.
	Expire func(t *testing.T, s sessionstore.Store, l sessionstore.Lease)
}

// opTimeout bounds every single store call the suite makes.
const opTimeout = 10 * time.Second

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, cfg Config) {
	if cfg.New == nil || cfg.TTL <= 0 {
		t.Fatalf("storetest: Config needs New and a positive TTL")
	}
	s := &suite{cfg: cfg}
	t.Run("ResolveUnknownKey", s.testResolveUnknownKey)
	t.Run("BindResolveRelease", s.testBindResolveRelease)
	t.Run("RegisterGivesNewIncarnations", s.testRegisterGivesNewIncarnations)
	t.Run("BindToNonMember", s.testBindToNonMember)
	t.Run("ConcurrentBindersAgree", s.testConcurrentBindersAgree)
	t.Run("EpochsOnlyGrow", s.testEpochsOnlyGrow)
	t.Run("ReleaseByNonOwner", s.testReleaseByNonOwner)
	t.Run("RenewedLeaseOutlivesTTL", s.testRenewedLeaseOutlivesTTL)
	t.Run("RevokeEndsLeaseAndBindings", s.testRevokeEndsLeaseAndBindings)
	t.Run("ExpiredLeaseIsTakenOver", s.testExpiredLeaseIsTakenOver)
	t.Run("EvictEndsLeaseAndBindings", s.testEvictEndsLeaseAndBindings)
	t.Run("ClosedClientLeaseRunsOut", s.testClosedClientLeaseRunsOut)
	t.Run("MembersListsLiveOnes", s.testMembersListsLiveOnes)
	t.Run("WatchMembers", s.testWatchMembers)
	t.Run("WatchMembersSlowConsumer", s.testWatchMembersSlowConsumer)
	t.Run("ExpiredContext", s.testExpiredContext)
	t.Run("ClosedClient", s.testClosedClient)
	t.Run("ClusterSecretIsShared", s.testClusterSecretIsShared)
	t.Run("Roles", s.runRoles)
}

type suite struct {
	cfg Config
}

// lossDeadline is how long the suite waits for a lease that is no longer
// renewed to end: the TTL twice over plus a margin for a loaded machine. It
// turns a lease that never ends into a failure; when it ends is not asserted.
func (s *suite) lossDeadline() time.Duration { return 2*s.cfg.TTL + 30*time.Second }

// client returns a new store client that is closed when the test ends.
func (s *suite) client(t *testing.T) sessionstore.Store {
	t.Helper()
	c := s.cfg.New(t)
	if c == nil {
		t.Fatalf("Config.New returned nil")
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// namespace returns a prefix for the keys and addresses of one subtest.
func namespace(t *testing.T) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random namespace: %v", err)
	}
	name := strings.NewReplacer("/", "-", " ", "-", ":", "-").Replace(t.Name())
	return "st-" + name + "-" + hex.EncodeToString(b[:])
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// register registers addr on c and revokes the lease when the test ends.
// twoNodes returns two clients, as two nodes, the subtest's namespace, and a
// lease registered on each (a on c1, b on c2).
func (s *suite) twoNodes(t *testing.T) (c1, c2 sessionstore.Store, ns string, a, b sessionstore.Lease) {
	t.Helper()
	c1, c2 = s.client(t), s.client(t)
	ns = namespace(t)
	return c1, c2, ns, s.register(t, c1, ns+"-a:1"), s.register(t, c2, ns+"-b:1")
}

// nodes returns n clients, as n nodes, each with a lease of its own in ns.
func (s *suite) nodes(t *testing.T, ns string, n int) ([]sessionstore.Store, []sessionstore.Lease) {
	t.Helper()
	cs := make([]sessionstore.Store, n)
	ls := make([]sessionstore.Lease, n)
	for i := range cs {
		cs[i] = s.client(t)
		ls[i] = s.register(t, cs[i], fmt.Sprintf("%s-n%d:1", ns, i))
	}
	return cs, ls
}

func (s *suite) register(t *testing.T, c sessionstore.Store, addr string) sessionstore.Lease {
	t.Helper()
	l, err := c.Register(opCtx(t), addr, s.cfg.TTL)
	if err != nil {
		t.Fatalf("Register(%s): %v", addr, err)
	}
	if l.Member().Addr != addr {
		t.Fatalf("Register(%s) gave member %+v", addr, l.Member())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Revoke(ctx)
	})
	return l
}

func mustBind(t *testing.T, c sessionstore.Store, key string, owner sessionstore.Member) sessionstore.Binding {
	t.Helper()
	b, err := c.Bind(opCtx(t), key, owner)
	if err != nil {
		t.Fatalf("Bind(%s, %+v): %v", key, owner, err)
	}
	if b.Key != key || b.Epoch <= 0 {
		t.Fatalf("Bind(%s, %+v) = %+v: want the key and a positive epoch", key, owner, b)
	}
	return b
}

func mustResolve(t *testing.T, c sessionstore.Store, key string) (sessionstore.Binding, bool) {
	t.Helper()
	b, ok, err := c.Resolve(opCtx(t), key)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", key, err)
	}
	return b, ok
}

func wantResolve(t *testing.T, c sessionstore.Store, key string, want sessionstore.Binding) {
	t.Helper()
	got, ok := mustResolve(t, c, key)
	if !ok || got != want {
		t.Fatalf("Resolve(%s) = %+v, %v; want %+v", key, got, ok, want)
	}
}

func wantUnbound(t *testing.T, c sessionstore.Store, key string) {
	t.Helper()
	if got, ok := mustResolve(t, c, key); ok {
		t.Fatalf("Resolve(%s) = %+v; want no binding", key, got)
	}
}

// members lists c's live members whose address starts with ns.
func members(t *testing.T, c sessionstore.Store, ns string) []sessionstore.Member {
	t.Helper()
	all, err := c.Members(opCtx(t))
	if err != nil {
		t.Fatalf("Members: %v", err)
	}
	var ms []sessionstore.Member
	for _, m := range all {
		if strings.HasPrefix(m.Addr, ns) {
			ms = append(ms, m)
		}
	}
	sortMembers(ms)
	return ms
}

func sortMembers(ms []sessionstore.Member) {
	slices.SortFunc(ms, func(a, b sessionstore.Member) int {
		if c := strings.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return int(a.Incarnation - b.Incarnation)
	})
}

func memberSet(ls ...sessionstore.Lease) []sessionstore.Member {
	ms := make([]sessionstore.Member, 0, len(ls))
	for _, l := range ls {
		ms = append(ms, l.Member())
	}
	sortMembers(ms)
	return ms
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not closed within %v", what, d)
	}
}

func (s *suite) testResolveUnknownKey(t *testing.T) {
	c := s.client(t)
	ns := namespace(t)
	b, ok, err := c.Resolve(opCtx(t), ns+"/never-bound")
	if err != nil || ok || b != (sessionstore.Binding{}) {
		t.Fatalf("Resolve(unknown) = %+v, %v, %v; want zero binding, false, nil", b, ok, err)
	}
}

func (s *suite) testBindResolveRelease(t *testing.T) {
	c1, c2 := s.client(t), s.client(t)
	ns := namespace(t)
	key := ns + "/doc"
	a := s.register(t, c1, ns+"-a:1")

	b := mustBind(t, c1, key, a.Member())
	if b.Owner != a.Member() {
		t.Fatalf("Bind gave owner %+v, want %+v", b.Owner, a.Member())
	}
	wantResolve(t, c1, key, b)
	wantResolve(t, c2, key, b)
	if again := mustBind(t, c2, key, a.Member()); again != b {
		t.Fatalf("second Bind by the owner = %+v, want the binding in force %+v", again, b)
	}

	if err := c1.Release(opCtx(t), b); err != nil {
		t.Fatalf("Release by owner: %v", err)
	}
	wantUnbound(t, c1, key)
	wantUnbound(t, c2, key)
	if err := c1.Release(opCtx(t), b); !errors.Is(err, sessionstore.ErrNotOwner) {
		t.Fatalf("second Release = %v, want ErrNotOwner", err)
	}
}

func (s *suite) testRegisterGivesNewIncarnations(t *testing.T) {
	c1, c2 := s.client(t), s.client(t)
	ns := namespace(t)
	addr := ns + "-a:1"
	first := s.register(t, c1, addr)
	second := s.register(t, c2, addr)
	if first.Member().Incarnation == second.Member().Incarnation {
		t.Fatalf("two registrations of %s share incarnation %d", addr, first.Member().Incarnation)
	}
	if got, want := members(t, c1, ns), memberSet(first, second); !slices.Equal(got, want) {
		t.Fatalf("Members = %+v, want both registrations %+v", got, want)
	}
	if err := first.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	third := s.register(t, c1, addr)
	if third.Member().Incarnation == first.Member().Incarnation || third.Member().Incarnation == second.Member().Incarnation {
		t.Fatalf("re-registration reused an incarnation: %+v", third.Member())
	}
}

func (s *suite) testBindToNonMember(t *testing.T) {
	c := s.client(t)
	ns := namespace(t)
	a := s.register(t, c, ns+"-a:1")

	strangers := []sessionstore.Member{
		{Addr: ns + "-never:1", Incarnation: a.Member().Incarnation + 1000003},
		{Addr: ns + "-never:1", Incarnation: a.Member().Incarnation},
		{Addr: a.Member().Addr, Incarnation: a.Member().Incarnation + 1000003},
	}
	for i, m := range strangers {
		key := fmt.Sprintf("%s/doc-%d", ns, i)
		if b, err := c.Bind(opCtx(t), key, m); !errors.Is(err, sessionstore.ErrNotMember) {
			t.Fatalf("Bind to non-member %+v = %+v, %v; want ErrNotMember", m, b, err)
		}
		wantUnbound(t, c, key)
	}

	revoked := s.register(t, c, ns+"-b:1")
	if err := revoked.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	key := ns + "/doc-revoked"
	if b, err := c.Bind(opCtx(t), key, revoked.Member()); !errors.Is(err, sessionstore.ErrNotMember) {
		t.Fatalf("Bind to revoked member = %+v, %v; want ErrNotMember", b, err)
	}
	wantUnbound(t, c, key)
}

func (s *suite) testConcurrentBindersAgree(t *testing.T) {
	const (
		clients    = 3
		goroutines = 8
		keys       = 6
	)
	ns := namespace(t)
	cs, ls := s.nodes(t, ns, clients)
	isMember := func(m sessionstore.Member) bool {
		return slices.ContainsFunc(ls, func(l sessionstore.Lease) bool { return l.Member() == m })
	}

	for k := range keys {
		key := fmt.Sprintf("%s/doc-%d", ns, k)
		results, errs := race(clients, goroutines, func(i int) (sessionstore.Binding, error) {
			return cs[i].Bind(opCtx(t), key, ls[i].Member())
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("key %s: binder %d: %v", key, i, err)
			}
		}
		winner := results[0]
		if !isMember(winner.Owner) || winner.Key != key || winner.Epoch <= 0 {
			t.Fatalf("key %s: winner %+v is not one of the binders' members", key, winner)
		}
		for i, b := range results {
			if b != winner {
				t.Fatalf("key %s: binder %d was told %+v, binder 0 was told %+v", key, i, b, winner)
			}
		}
		for _, c := range cs {
			wantResolve(t, c, key, winner)
		}
	}
}

func (s *suite) testEpochsOnlyGrow(t *testing.T) {
	c1, c2, ns, a, b := s.twoNodes(t)
	k1, k2, k3 := ns+"/doc-1", ns+"/doc-2", ns+"/doc-3"

	var last int64
	grows := func(what string, bd sessionstore.Binding) {
		t.Helper()
		if bd.Epoch <= last {
			t.Fatalf("%s: epoch %d, not above the previous %d", what, bd.Epoch, last)
		}
		last = bd.Epoch
	}

	x := mustBind(t, c1, k1, a.Member())
	grows("first bind", x)
	grows("bind of another key (store-wide counter)", mustBind(t, c2, k2, b.Member()))

	if err := c1.Release(opCtx(t), x); err != nil {
		t.Fatalf("Release: %v", err)
	}
	y := mustBind(t, c2, k1, b.Member())
	if y.Owner != b.Member() {
		t.Fatalf("rebind after release went to %+v, want %+v", y.Owner, b.Member())
	}
	grows("rebind by another member after release", y)
	if err := c2.Release(opCtx(t), y); err != nil {
		t.Fatalf("Release: %v", err)
	}
	grows("rebind by the first owner again", mustBind(t, c1, k1, a.Member()))

	z := mustBind(t, c2, k3, b.Member())
	grows("bind of a third key", z)
	if err := b.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	taken := mustBind(t, c1, k3, a.Member())
	if taken.Owner != a.Member() {
		t.Fatalf("takeover after revoke went to %+v, want %+v", taken.Owner, a.Member())
	}
	grows("takeover after the owner's lease was revoked", taken)
}

func (s *suite) testReleaseByNonOwner(t *testing.T) {
	c1, c2, ns, a, b := s.twoNodes(t)
	key := ns + "/doc"

	x := mustBind(t, c1, key, a.Member())
	forged := []sessionstore.Binding{
		{Key: key, Owner: b.Member(), Epoch: x.Epoch},
		{Key: key, Owner: a.Member(), Epoch: x.Epoch - 1},
		{Key: key, Owner: a.Member(), Epoch: x.Epoch + 1},
		{Key: key, Owner: sessionstore.Member{Addr: a.Member().Addr, Incarnation: a.Member().Incarnation + 1}, Epoch: x.Epoch},
		{Key: ns + "/other", Owner: a.Member(), Epoch: x.Epoch},
	}
	for _, f := range forged {
		if err := c2.Release(opCtx(t), f); !errors.Is(err, sessionstore.ErrNotOwner) {
			t.Fatalf("Release(%+v) of binding %+v = %v, want ErrNotOwner", f, x, err)
		}
	}
	wantResolve(t, c2, key, x)

	if err := c1.Release(opCtx(t), x); err != nil {
		t.Fatalf("Release by owner: %v", err)
	}
	y := mustBind(t, c2, key, b.Member())
	if err := c1.Release(opCtx(t), x); !errors.Is(err, sessionstore.ErrNotOwner) {
		t.Fatalf("Release of the stale binding %+v = %v, want ErrNotOwner", x, err)
	}
	wantResolve(t, c1, key, y)
}

func (s *suite) testRenewedLeaseOutlivesTTL(t *testing.T) {
	c1, c2, ns, a, b := s.twoNodes(t)
	key := ns + "/doc"
	x := mustBind(t, c1, key, a.Member())
	// Register's context bounds the registration only: a lease registered
	// under one that ends at once lives on.
	rctx, cancel := context.WithCancel(t.Context())
	short, err := c1.Register(rctx, ns+"-short:1", s.cfg.TTL)
	cancel()
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	t.Cleanup(func() { _ = short.Revoke(context.Background()) })

	start := time.Now()
	for _, at := range []time.Duration{s.cfg.TTL / 2, s.cfg.TTL, 2 * s.cfg.TTL, 3 * s.cfg.TTL} {
		// Letting time pass is the point of this test: the lease must be
		// renewed in the background across several TTLs.
		time.Sleep(time.Until(start.Add(at)))
		if isClosed(a.Done()) {
			t.Fatalf("renewed lease ended after %v", at)
		}
		if isClosed(short.Done()) {
			t.Fatalf("the lease whose Register context ended was not renewed: ended after %v", at)
		}
		wantResolve(t, c2, key, x)
		if got := mustBind(t, c2, key, b.Member()); got != x {
			t.Fatalf("after %v a competing Bind got %+v, want the renewed owner's %+v", at, got, x)
		}
		if got := members(t, c2, ns); !slices.Contains(got, a.Member()) {
			t.Fatalf("after %v Members = %+v lacks the renewed member", at, got)
		}
	}
}

func (s *suite) testRevokeEndsLeaseAndBindings(t *testing.T) {
	c1, c2, ns, a, b := s.twoNodes(t)
	key := ns + "/doc"
	x := mustBind(t, c1, key, a.Member())

	if err := a.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if !isClosed(a.Done()) {
		t.Fatalf("Done not closed when Revoke returned")
	}
	wantUnbound(t, c2, key)
	if got, want := members(t, c2, ns), memberSet(b); !slices.Equal(got, want) {
		t.Fatalf("Members after Revoke = %+v, want %+v", got, want)
	}
	if err := c1.Release(opCtx(t), x); !errors.Is(err, sessionstore.ErrNotOwner) {
		t.Fatalf("Release of a revoked member's binding = %v, want ErrNotOwner", err)
	}
	if got, err := c1.Bind(opCtx(t), ns+"/doc-2", a.Member()); !errors.Is(err, sessionstore.ErrNotMember) {
		t.Fatalf("Bind to the revoked member = %+v, %v; want ErrNotMember", got, err)
	}
	y := mustBind(t, c2, key, b.Member())
	if y.Owner != b.Member() || y.Epoch <= x.Epoch {
		t.Fatalf("takeover after Revoke = %+v; want owner %+v with epoch above %d", y, b.Member(), x.Epoch)
	}
}

// wantTakeover polls until b's Bind of key wins over the old binding x, which
// must stay the answer until then, and returns the new binding.
func (s *suite) wantTakeover(t *testing.T, c sessionstore.Store, key string, x sessionstore.Binding, b sessionstore.Member) sessionstore.Binding {
	t.Helper()
	var y sessionstore.Binding
	poll.Until(t, s.lossDeadline(), "takeover of "+key, func() error {
		got, err := c.Bind(opCtx(t), key, b)
		if err != nil {
			t.Fatalf("Bind while waiting for takeover: %v", err)
		}
		if got == x {
			return fmt.Errorf("still bound to %+v", x)
		}
		if got.Owner != b || got.Epoch <= x.Epoch {
			t.Fatalf("Bind = %+v: neither the old binding %+v nor a takeover by %+v with a larger epoch", got, x, b)
		}
		y = got
		return nil
	})
	wantResolve(t, c, key, y)
	return y
}

func (s *suite) testExpiredLeaseIsTakenOver(t *testing.T) {
	if s.cfg.Expire == nil {
		t.Skip("Config.Expire is nil")
	}
	c1, c2 := s.client(t), s.client(t)
	ns := namespace(t)
	a := s.register(t, c1, ns+"-a:1")
	stay := s.register(t, c1, ns+"-a:2")
	b := s.register(t, c2, ns+"-b:1")
	key := ns + "/doc"
	x := mustBind(t, c1, key, a.Member())

	s.cfg.Expire(t, c1, a)
	s.wantTakeover(t, c2, key, x, b.Member())
	waitClosed(t, a.Done(), s.lossDeadline(), "Done of the expired lease")
	if got, want := members(t, c2, ns), memberSet(stay, b); !slices.Equal(got, want) {
		t.Fatalf("Members after expiry = %+v, want %+v", got, want)
	}
	if err := c1.Release(opCtx(t), x); !errors.Is(err, sessionstore.ErrNotOwner) {
		t.Fatalf("Release by the expired owner = %v, want ErrNotOwner", err)
	}
	if isClosed(stay.Done()) {
		t.Fatalf("expiring one lease ended another lease of the same client")
	}
	// The client that lost a lease can still register and bind.
	again := s.register(t, c1, ns+"-a:1")
	mustBind(t, c1, ns+"/doc-2", again.Member())
}

func (s *suite) testClosedClientLeaseRunsOut(t *testing.T) {
	c1 := s.cfg.New(t)
	c2 := s.client(t)
	ns := namespace(t)
	a, err := c1.Register(opCtx(t), ns+"-a:1", s.cfg.TTL)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	b := s.register(t, c2, ns+"-b:1")
	key := ns + "/doc"
	x := mustBind(t, c1, key, a.Member())

	// A node that dies closes nothing; closing its client without revoking
	// is the nearest a test gets. The lease must run out on its own.
	if err := c1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s.wantTakeover(t, c2, key, x, b.Member())
	waitClosed(t, a.Done(), s.lossDeadline(), "Done of the lease of a closed client")
	if got, want := members(t, c2, ns), memberSet(b); !slices.Equal(got, want) {
		t.Fatalf("Members = %+v, want %+v", got, want)
	}
}

func (s *suite) testMembersListsLiveOnes(t *testing.T) {
	c1, c2, c3 := s.client(t), s.client(t), s.client(t)
	ns := namespace(t)
	if got := members(t, c1, ns); len(got) != 0 {
		t.Fatalf("Members of a fresh namespace = %+v", got)
	}
	a := s.register(t, c1, ns+"-a:1")
	a2 := s.register(t, c1, ns+"-a:2")
	b := s.register(t, c2, ns+"-b:1")
	c := s.register(t, c3, ns+"-c:1")
	for _, cl := range []sessionstore.Store{c1, c2, c3} {
		if got, want := members(t, cl, ns), memberSet(a, a2, b, c); !slices.Equal(got, want) {
			t.Fatalf("Members = %+v, want %+v", got, want)
		}
	}
	if err := b.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if got, want := members(t, c3, ns), memberSet(a, a2, c); !slices.Equal(got, want) {
		t.Fatalf("Members after Revoke = %+v, want %+v", got, want)
	}
	if s.cfg.Expire == nil {
		return
	}
	s.cfg.Expire(t, c3, c)
	poll.Until(t, s.lossDeadline(), "expired member leaves Members", func() error {
		if got, want := members(t, c1, ns), memberSet(a, a2); !slices.Equal(got, want) {
			return fmt.Errorf("members %+v, want %+v", got, want)
		}
		return nil
	})
}

// watcher reads a member watch filtered to one namespace.
type watcher struct {
	ns string
	ch <-chan sessionstore.MemberEvent
}

// next returns the next event of the namespace within d.
func (w *watcher) next(t *testing.T, d time.Duration) sessionstore.MemberEvent {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-w.ch:
			if !ok {
				t.Fatalf("member watch closed early")
			}
			if strings.HasPrefix(ev.Member.Addr, w.ns) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no member event within %v", d)
		}
	}
}

func (w *watcher) want(t *testing.T, d time.Duration, typ sessionstore.MemberEventType, m sessionstore.Member) {
	t.Helper()
	if ev := w.next(t, d); ev.Type != typ || ev.Member != m {
		t.Fatalf("member event %+v, want type %d for %+v", ev, typ, m)
	}
}

func (s *suite) testWatchMembers(t *testing.T) {
	c1, c2, c3 := s.client(t), s.client(t), s.client(t)
	ns := namespace(t)
	a := s.register(t, c1, ns+"-a:1")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := c2.WatchMembers(ctx)
	if err != nil {
		t.Fatalf("WatchMembers: %v", err)
	}
	w := &watcher{ns: ns, ch: ch}
	const quick = opTimeout
	w.want(t, quick, sessionstore.MemberJoined, a.Member())

	b := s.register(t, c3, ns+"-b:1")
	w.want(t, quick, sessionstore.MemberJoined, b.Member())
	if err := b.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	w.want(t, quick, sessionstore.MemberLeft, b.Member())

	if s.cfg.Expire != nil {
		c := s.register(t, c3, ns+"-c:1")
		w.want(t, quick, sessionstore.MemberJoined, c.Member())
		s.cfg.Expire(t, c3, c)
		w.want(t, s.lossDeadline()+quick, sessionstore.MemberLeft, c.Member())
	}

	// A second watch starts with the members as they are now.
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	ch2, err := c1.WatchMembers(ctx2)
	if err != nil {
		t.Fatalf("second WatchMembers: %v", err)
	}
	w2 := &watcher{ns: ns, ch: ch2}
	w2.want(t, quick, sessionstore.MemberJoined, a.Member())
	d := s.register(t, c3, ns+"-d:1")
	w2.want(t, quick, sessionstore.MemberJoined, d.Member())
	w.want(t, quick, sessionstore.MemberJoined, d.Member())

	cancel()
	timeout := time.After(quick)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("member watch channel not closed within %v of its context ending", quick)
		}
	}
}

// A consumer that does not read while membership changes may miss events,
// but what it reads afterwards must bring it to the membership as it is.
func (s *suite) testWatchMembersSlowConsumer(t *testing.T) {
	c1, c2 := s.client(t), s.client(t)
	ns := namespace(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := c2.WatchMembers(ctx)
	if err != nil {
		t.Fatalf("WatchMembers: %v", err)
	}

	// Change membership a lot while nobody reads the watch.
	const n = 40
	var live []sessionstore.Lease
	for i := range n {
		l := s.register(t, c1, fmt.Sprintf("%s-n%d:1", ns, i))
		if i%2 == 1 {
			if err := l.Revoke(opCtx(t)); err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			continue
		}
		live = append(live, l)
	}
	want := memberSet(live...)

	// Now read: applying the events in order must reach exactly the live set.
	view := map[sessionstore.Member]bool{}
	viewList := func() []sessionstore.Member {
		var ms []sessionstore.Member
		for m := range view {
			ms = append(ms, m)
		}
		sortMembers(ms)
		return ms
	}
	timeout := time.After(opTimeout)
	for !slices.Equal(viewList(), want) {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("member watch closed early")
			}
			if !strings.HasPrefix(ev.Member.Addr, ns) {
				continue
			}
			switch ev.Type {
			case sessionstore.MemberJoined:
				view[ev.Member] = true
			case sessionstore.MemberLeft:
				delete(view, ev.Member)
			default:
				t.Fatalf("member event of unknown type %d", ev.Type)
			}
		case <-timeout:
			t.Fatalf("after %v the watch shows %+v, want the live members %+v", opTimeout, viewList(), want)
		}
	}
}

func (s *suite) testExpiredContext(t *testing.T) {
	c := s.client(t)
	ns := namespace(t)
	a := s.register(t, c, ns+"-a:1")
	x := mustBind(t, c, ns+"/bound", a.Member())

	expired, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	canceled, cancel2 := context.WithCancel(t.Context())
	cancel2()

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Register", func(ctx context.Context) error {
			_, err := c.Register(ctx, ns+"-late:1", s.cfg.TTL)
			return err
		}},
		{"Members", func(ctx context.Context) error { _, err := c.Members(ctx); return err }},
		{"WatchMembers", func(ctx context.Context) error { _, err := c.WatchMembers(ctx); return err }},
		{"Resolve", func(ctx context.Context) error { _, _, err := c.Resolve(ctx, x.Key); return err }},
		{"Bind", func(ctx context.Context) error { _, err := c.Bind(ctx, ns+"/late", a.Member()); return err }},
		{"Release", func(ctx context.Context) error { return c.Release(ctx, x) }},
		{"Revoke", func(ctx context.Context) error { return a.Revoke(ctx) }},
	}
	// How fast the refusals come is logged, not asserted: on a loaded
	// machine any call may be descheduled for a while. A call that blocked
	// instead would still hang on the test's own deadline.
	var slowest time.Duration
	var slowestName string
	for _, tc := range calls {
		for _, cc := range []struct {
			ctx  context.Context
			want error
		}{{expired, context.DeadlineExceeded}, {canceled, context.Canceled}} {
			start := time.Now()
			err := tc.call(cc.ctx)
			if !errors.Is(err, cc.want) {
				t.Errorf("%s with an ended context = %v, want an error wrapping %v", tc.name, err, cc.want)
			}
			if took := time.Since(start); took > slowest {
				slowest, slowestName = took, tc.name
			}
		}
	}
	t.Logf("slowest refusal with an ended context: %s, %v", slowestName, slowest)

	// Nothing was written by the failed calls.
	if got, want := members(t, c, ns), memberSet(a); !slices.Equal(got, want) {
		t.Fatalf("Members = %+v after failed calls, want %+v", got, want)
	}
	wantUnbound(t, c, ns+"/late")
	wantResolve(t, c, x.Key, x)
	if isClosed(a.Done()) {
		t.Fatalf("Revoke with an ended context ended the lease")
	}
}

func (s *suite) testClosedClient(t *testing.T) {
	c := s.cfg.New(t)
	other := s.client(t)
	ns := namespace(t)
	a := s.register(t, other, ns+"-a:1")
	x := mustBind(t, other, ns+"/doc", a.Member())
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, _, err := c.Resolve(opCtx(t), x.Key); !errors.Is(err, fault.ErrShuttingDown) {
		t.Fatalf("Resolve on a closed client = %v, want fault.ErrShuttingDown", err)
	}
	if _, err := c.Bind(opCtx(t), ns+"/doc-2", a.Member()); !errors.Is(err, fault.ErrShuttingDown) {
		t.Fatalf("Bind on a closed client = %v, want fault.ErrShuttingDown", err)
	}
	if _, err := c.Register(opCtx(t), ns+"-b:1", s.cfg.TTL); !errors.Is(err, fault.ErrShuttingDown) {
		t.Fatalf("Register on a closed client = %v, want fault.ErrShuttingDown", err)
	}
	_ = c.Close()
	// Other clients are not affected.
	wantResolve(t, other, x.Key, x)
}

// testClusterSecretIsShared: every client of one backend, racing to create
// it, gets the same non-empty secret, and it does not change afterwards.
func (s *suite) testClusterSecretIsShared(t *testing.T) {
	clients := []sessionstore.Store{s.client(t), s.client(t), s.client(t)}
	got := make([]string, 3*len(clients))
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secret, err := clients[i%len(clients)].ClusterSecret(opCtx(t))
			if err != nil {
				t.Errorf("ClusterSecret: %v", err)
			}
			got[i] = secret
		}()
	}
	wg.Wait()
	for i, secret := range got {
		if secret == "" || secret != got[0] {
			t.Fatalf("client call %d got secret %q, call 0 got %q", i, secret, got[0])
		}
	}
	if len(got[0]) < 16 {
		t.Fatalf("secret %q is too short to be a secret", got[0])
	}
	again, err := s.client(t).ClusterSecret(opCtx(t))
	if err != nil || again != got[0] {
		t.Fatalf("a later client got %q (%v), want %q", again, err, got[0])
	}
}

// race runs call goroutines times for each of clients callers, all released at
// once, and returns every result and error indexed by caller*goroutines+g.
func race[T any](clients, goroutines int, call func(caller int) (T, error)) ([]T, []error) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]T, clients*goroutines)
	errs := make([]error, clients*goroutines)
	for i := range clients {
		for g := range goroutines {
			idx := i*goroutines + g
			wg.Go(func() {
				<-start
				results[idx], errs[idx] = call(i)
			})
		}
	}
	close(start)
	wg.Wait()
	return results, errs
}
