// Package memory is an in-process session store: one process, any number of
// goroutines, and several server instances sharing one Store (an in-process
// cluster, each instance with its own Client).
//
// Leases have real-time TTLs: a background goroutine renews each lease every
// TTL/3, and a lease whose deadline passes without renewal is dead for every
// reader at once, whether or not the goroutine has noticed yet. Epochs come
// from one store-wide counter. Resolve of a hit takes no lock.
//
// Weaker points: the store lives and dies with the process, so it only
// protects against split brain between instances inside one process; and a
// process stalled for longer than the TTL (a long GC pause, a suspended VM)
// loses its leases like a partitioned node would.
package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Config holds the options of a Store.
type Config struct {
	// Logger receives lease losses; nil means slog.Default().
	Logger *slog.Logger
}

// Store is the shared in-process backend. It implements sessionstore.Store
// itself (for a single server); servers sharing it should each take a Client,
// so that one server's Close does not affect the others.
type Store struct {
	log   *slog.Logger
	root  *Client
	start time.Time     // lease deadlines are monotonic offsets from start
	done  chan struct{} // closed by Close
	once  sync.Once

	epochs       atomic.Int64
	incarnations atomic.Int64
	closed       atomic.Bool

	// bindings maps a document key to its *entry. Readers never lock;
	// writers of a key hold its lock in writeLocks, so that a key's entries
	// are installed one after the other and draw growing epochs.
	bindings   sync.Map
	writeLocks [64]sync.Mutex
	seed       maphash.Seed

	secretOnce sync.Once
	secret     string

	mu       sync.Mutex
	leases   map[int64]*lease  // registered leases by incarnation, until they end
	roles    map[string]*lease // the holder of each claimed role
	watchers map[chan struct{}]struct{}
}

// entry is one binding: its epoch and the lease of its owner, whose member
// is the binding's owner. The key is the map's; nothing else is kept, as a
// node may hold a binding for each of many documents.
type entry struct {
	epoch int64
	l     *lease
}

// binding is the binding e stands for under key.
func (e *entry) binding(key string) sessionstore.Binding {
	return sessionstore.Binding{Key: key, Owner: e.l.member, Epoch: e.epoch}
}

// New returns an empty store.
func New(cfg Config) *Store {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Store{
		log:      log.With("component", "sessionstore/memory"),
		start:    time.Now(),
		seed:     maphash.MakeSeed(),
		done:     make(chan struct{}),
		leases:   make(map[int64]*lease),
		roles:    make(map[string]*lease),
		watchers: make(map[chan struct{}]struct{}),
	}
	s.root = s.Client()
	return s
}

// Client returns a new client of s, the view one server instance has. Closing
// it stops the renewal of the leases registered through it and ends its
// member watches; other clients keep working.
func (s *Store) Client() *Client {
	return &Client{s: s, done: make(chan struct{})}
}

// next draws the next value of a counter, never below the wall clock in
// microseconds. Epochs then keep growing across process restarts, which
// matters because the database remembers the epochs that claimed each
// document: a restarted node counting from 1 again would be fenced out of
// every document it owned before.
func next(counter *atomic.Int64) int64 {
	floor := time.Now().UnixMicro()
	for {
		cur := counter.Load()
		v := max(cur+1, floor)
		if counter.CompareAndSwap(cur, v) {
			return v
		}
	}
}

// ExpireLease ends m's lease now, as if its node had stopped renewing it
// (a partition): its Done closes, its bindings end, and watchers see it
// leave. It is a fault-injection hook for tests; unknown members are ignored.
func (s *Store) ExpireLease(m sessionstore.Member) {
	if l := s.lookup(m); l != nil {
		l.end("expired by fault injection")
	}
}

// Register makes addr a live member; see sessionstore.Store.
func (s *Store) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	return s.root.Register(ctx, addr, ttl)
}

// ClusterSecret returns the store's shared secret; see sessionstore.Store.
func (s *Store) ClusterSecret(ctx context.Context) (string, error) {
	return s.root.ClusterSecret(ctx)
}

// Members lists the live members; see sessionstore.Store.
func (s *Store) Members(ctx context.Context) ([]sessionstore.Member, error) {
	return s.root.Members(ctx)
}

// WatchMembers reports membership changes; see sessionstore.Store.
func (s *Store) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	return s.root.WatchMembers(ctx)
}

// Resolve returns the live binding of key; see sessionstore.Store.
func (s *Store) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	return s.root.Resolve(ctx, key)
}

// Bind binds key to owner unless it is bound; see sessionstore.Store.
func (s *Store) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	return s.root.Bind(ctx, key, owner)
}

// Release deletes b if it is still in force; see sessionstore.Store.
func (s *Store) Release(ctx context.Context, b sessionstore.Binding) error {
	return s.root.Release(ctx, b)
}

// Close closes the whole store: every client refuses further calls, member
// watches end and leases are no longer renewed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.once.Do(func() { close(s.done) })
	s.root.Close()
	s.mu.Lock()
	for w := range s.watchers {
		notify(w)
	}
	s.mu.Unlock()
	return nil
}

// writeLock returns the lock writers of key hold.
func (s *Store) writeLock(key string) *sync.Mutex {
	return &s.writeLocks[maphash.String(s.seed, key)%uint64(len(s.writeLocks))]
}

// now is the monotonic time since the store started, immune to wall clock
// jumps and cheaper to read than time.Now.
func (s *Store) now() int64 { return int64(time.Since(s.start)) }

// lookup returns m's lease if m is a live member.
func (s *Store) lookup(m sessionstore.Member) *lease {
	s.mu.Lock()
	l := s.leases[m.Incarnation]
	s.mu.Unlock()
	if l == nil || l.member.Addr != m.Addr || !l.alive() {
		return nil
	}
	return l
}

// live lists the live members, sorted.
func (s *Store) live() []sessionstore.Member {
	s.mu.Lock()
	ms := make([]sessionstore.Member, 0, len(s.leases))
	for _, l := range s.leases {
		if l.alive() {
			ms = append(ms, l.member)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(ms, func(a, b sessionstore.Member) int {
		if c := strings.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		return cmp.Compare(a.Incarnation, b.Incarnation)
	})
	return ms
}

// membershipChanged wakes every member watcher.
func (s *Store) membershipChanged() {
	s.mu.Lock()
	for w := range s.watchers {
		notify(w)
	}
	s.mu.Unlock()
}

func notify(w chan struct{}) {
	select {
	case w <- struct{}{}:
	default:
	}
}

// forget drops l and the bindings that lived with it.
func (s *Store) forget(l *lease) {
	s.mu.Lock()
	delete(s.leases, l.member.Incarnation)
	s.forgetRoles(l)
	s.mu.Unlock()
	s.bindings.Range(func(k, v any) bool {
		if v.(*entry).l == l {
			mu := s.writeLock(k.(string))
			mu.Lock()
			s.bindings.CompareAndDelete(k, v)
			mu.Unlock()
		}
		return true
	})
	s.membershipChanged()
}

// Client is one server instance's connection to a shared Store.
type Client struct {
	s      *Store
	closed atomic.Bool
	once   sync.Once
	done   chan struct{} // closed by Close
}

var _ sessionstore.Store = (*Client)(nil)

// check fails a call on a closed client or an ended context.
func (c *Client) check(ctx context.Context, op string) error {
	if c.closed.Load() || c.s.closed.Load() {
		return fmt.Errorf("memory: %s: %w", op, fault.ErrShuttingDown)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	return nil
}

// Register makes addr a live member under a lease with the given TTL, renewed
// until Revoke, ExpireLease or Close of this client.
func (c *Client) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	if err := c.check(ctx, "register"); err != nil {
		return nil, err
	}
	if addr == "" || ttl <= 0 {
		return nil, fmt.Errorf("memory: register %q with TTL %v: address and a positive TTL are needed", addr, ttl)
	}
	l := &lease{
		s:      c.s,
		member: sessionstore.Member{Addr: addr, Incarnation: next(&c.s.incarnations)},
		ttl:    ttl,
		done:   make(chan struct{}),
	}
	l.deadline.Store(c.s.now() + int64(ttl))
	c.s.mu.Lock()
	c.s.leases[l.member.Incarnation] = l
	c.s.mu.Unlock()
	c.s.membershipChanged()
	go l.renew(c.done)
	return l, nil
}

// Members lists the live members.
func (c *Client) Members(ctx context.Context) ([]sessionstore.Member, error) {
	if err := c.check(ctx, "members"); err != nil {
		return nil, err
	}
	return c.s.live(), nil
}

// WatchMembers reports the live members as joined, then each change, until
// ctx ends or the client is closed. A slow consumer gets the difference
// between what it was last told and the current membership.
func (c *Client) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	if err := c.check(ctx, "watch members"); err != nil {
		return nil, err
	}
	wake := make(chan struct{}, 1)
	c.s.mu.Lock()
	c.s.watchers[wake] = struct{}{}
	c.s.mu.Unlock()
	out := make(chan sessionstore.MemberEvent, 16)
	go func() {
		defer close(out)
		defer func() {
			c.s.mu.Lock()
			delete(c.s.watchers, wake)
			c.s.mu.Unlock()
		}()
		told := map[sessionstore.Member]bool{}
		send := func(ev sessionstore.MemberEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
			case <-c.done:
			}
			return false
		}
		for {
			if c.s.closed.Load() {
				return
			}
			now := c.s.live()
			for m := range told {
				if !slices.Contains(now, m) {
					if !send(sessionstore.MemberEvent{Type: sessionstore.MemberLeft, Member: m}) {
						return
					}
					delete(told, m)
				}
			}
			for _, m := range now {
				if !told[m] {
					if !send(sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: m}) {
						return
					}
					told[m] = true
				}
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
	}()
	return out, nil
}

// Resolve returns the live binding of key. A hit costs a map load and a
// clock read.
func (c *Client) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	if err := c.check(ctx, "resolve"); err != nil {
		return sessionstore.Binding{}, false, err
	}
	v, ok := c.s.bindings.Load(key)
	if !ok {
		return sessionstore.Binding{}, false, nil
	}
	e := v.(*entry)
	if !e.l.alive() {
		return sessionstore.Binding{}, false, nil
	}
	return e.binding(key), true, nil
}

// Bind binds key to owner unless key has a live binding, and returns the
// binding in force.
func (c *Client) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	if err := c.check(ctx, "bind "+strconv.Quote(key)); err != nil {
		return sessionstore.Binding{}, err
	}
	l := c.s.lookup(owner)
	if l == nil {
		return sessionstore.Binding{}, fmt.Errorf("memory: bind %q to %s/%d: %w", key, owner.Addr, owner.Incarnation, sessionstore.ErrNotMember)
	}
	if v, ok := c.s.bindings.Load(key); ok && v.(*entry).l.alive() {
		return v.(*entry).binding(key), nil
	}
	mu := c.s.writeLock(key)
	mu.Lock()
	defer mu.Unlock()
	if v, ok := c.s.bindings.Load(key); ok && v.(*entry).l.alive() {
		return v.(*entry).binding(key), nil
	}
	// Drawn under the key's write lock, after the previous binding was
	// installed, so the epoch is larger than that binding's.
	e := &entry{epoch: next(&c.s.epochs), l: l}
	c.s.bindings.Store(key, e)
	return e.binding(key), nil
}

// Release deletes b if it is still the binding in force.
func (c *Client) Release(ctx context.Context, b sessionstore.Binding) error {
	if err := c.check(ctx, "release"); err != nil {
		return err
	}
	mu := c.s.writeLock(b.Key)
	mu.Lock()
	defer mu.Unlock()
	v, ok := c.s.bindings.Load(b.Key)
	if !ok {
		return fmt.Errorf("memory: release %q: no binding: %w", b.Key, sessionstore.ErrNotOwner)
	}
	e := v.(*entry)
	if e.binding(b.Key) != b || !e.l.alive() {
		return fmt.Errorf("memory: release %q epoch %d: binding in force is epoch %d of %s: %w",
			b.Key, b.Epoch, e.epoch, e.l.member.Addr, sessionstore.ErrNotOwner)
	}
	c.s.bindings.Delete(b.Key)
	return nil
}

// ClusterSecret returns the secret shared by every client of the store,
// drawn at random on first use; see sessionstore.Store.
func (c *Client) ClusterSecret(ctx context.Context) (string, error) {
	if err := c.check(ctx, "cluster secret"); err != nil {
		return "", err
	}
	c.s.secretOnce.Do(func() { c.s.secret = rand.Text() })
	return c.s.secret, nil
}

// Close stops renewing the leases registered through c (they expire after
// their TTL) and ends c's member watches. It is safe to call more than once.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.closed.Store(true)
		close(c.done)
	})
	return nil
}

// lease is one registration.
type lease struct {
	s        *Store
	member   sessionstore.Member
	ttl      time.Duration
	deadline atomic.Int64 // Store.now after which the lease is dead
	ended    atomic.Bool  // set once the lease is dead; never cleared
	once     sync.Once
	done     chan struct{}
}

// alive reports whether the lease is in force now. The first caller that
// finds the deadline passed ends the lease, so that a late renewal cannot
// bring back a lease someone has already seen dead.
func (l *lease) alive() bool {
	if l.ended.Load() {
		return false
	}
	if l.s.now() < l.deadline.Load() {
		return true
	}
	if l.ended.CompareAndSwap(false, true) {
		go l.finish("deadline passed without renewal")
	}
	return false
}

// Member is the registration the lease keeps alive.
func (l *lease) Member() sessionstore.Member { return l.member }

// Done is closed when the lease has ended.
func (l *lease) Done() <-chan struct{} { return l.done }

// Revoke ends the lease and its bindings now. Revoking an ended lease does nothing.
func (l *lease) Revoke(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: revoke %s: %w", l.member.Addr, err)
	}
	l.end("")
	return nil
}

// end ends the lease now; reason is logged when it was not revoked.
func (l *lease) end(reason string) {
	l.ended.Store(true)
	l.finish(reason)
}

// finish closes Done and drops the ended lease's member and bindings, once;
// callers wait until that is done.
func (l *lease) finish(reason string) {
	l.once.Do(func() {
		close(l.done)
		if reason != "" {
			l.s.log.Warn("lease lost", "addr", l.member.Addr, "incarnation", l.member.Incarnation, "reason", reason)
		}
		l.s.forget(l)
	})
}

// renewOnce extends the lease by its TTL, unless its deadline has already
// passed (then it is lost).
func (l *lease) renewOnce() bool {
	now := l.s.now()
	if l.ended.Load() || now >= l.deadline.Load() {
		return false
	}
	l.deadline.Store(now + int64(l.ttl))
	// A reader may have seen the old deadline pass meanwhile and ended the
	// lease; then the new deadline does not count.
	return !l.ended.Load()
}

// renew keeps the lease alive every TTL/3 until it ends or stop closes; after
// stop it lets the lease run out.
func (l *lease) renew(stop <-chan struct{}) {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.s.done:
			return
		case <-stop:
			left := time.Duration(l.deadline.Load() - l.s.now())
			select {
			case <-l.done:
			case <-time.After(left):
				l.end("not renewed after its client closed")
			}
			return
		case <-tick.C:
			if !l.renewOnce() {
				l.end("renewal came after the deadline")
				return
			}
		}
	}
}
