package affinity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// DefaultTTL is the node lease TTL. A crashed node's documents are free for
// takeover after at most this long; with the JS SDK's 1 s reconnect delay,
// its clients sync again within about TTL + 1 s.
const DefaultTTL = 2 * time.Second

// maxOrphans bounds the memory of documents whose owner left, kept only to
// count takeovers.
const maxOrphans = 10000

// ErrStopped: the manager was stopped and serves no more requests; it is
// fault.ErrShuttingDown, with the part that closed named.
var ErrStopped = fmt.Errorf("affinity manager stopped: %w", fault.ErrShuttingDown)

// Config configures a Manager.
type Config struct {
	// Store is the shared session store (required).
	Store sessionstore.Store
	// AdvertiseAddr is the host:port other nodes and proxies reach this node at (required).
	AdvertiseAddr string
	// TTL of the node's lease; DefaultTTL when zero.
	TTL time.Duration
	// LoadFactor bounds placement; DefaultLoadFactor when <= 1.
	LoadFactor float64
	// OnLost is told the keys of documents this node stopped owning because
	// its lease ended or a fencing check failed. The server ends their
	// streams and drops their state. It runs on the manager's goroutine.
	OnLost func(keys []string)
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Registerer receives the manager's metrics; none when nil.
	Registerer prometheus.Registerer
	// HeartbeatInterval is how often the other members are probed (see
	// suspect.go); zero probes none. HeartbeatFor gives one for a TTL.
	HeartbeatInterval time.Duration
	// HeartbeatMisses is how many probes in a row a member may miss before
	// it is evicted; DefaultHeartbeatMisses when zero.
	HeartbeatMisses int
	// Witness asks the member at witness whether it reaches the member at
	// addr itself (ClusterService Reach). Before it evicts a member on its
	// own evidence, this node asks other live members (suspect.go); nil
	// asks none.
	Witness func(ctx context.Context, witness, addr string) (reached bool, err error)
	// Dial opens and closes a connection to a member's address, for
	// heartbeats and to confirm a refusal; a TCP dial when nil.
	Dial func(ctx context.Context, addr string) error
}

// Owner is the node that owns a document, as a routing decision needs it.
type Owner struct {
	// Addr is the owner's advertised host:port.
	Addr string
	// SessionKey is Addr encoded for the x-session-key header.
	SessionKey string
	// Epoch is the binding's fencing token; the owner writes with it.
	Epoch int64
	// Self is true when this node is the owner.
	Self bool
}

// Manager keeps this node's lease, a view of the live members and a cache
// of bindings, and answers "who owns this document?".
//
// The cache is what keeps the owner's hot path free of store calls: a
// binding to this node stays valid while the node's own lease lives (the
// lease's Done channel says when it ends), and a binding to another node
// stays valid while that member is in the membership view. Anything else is
// asked of the store.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	store   *meteredStore
	metrics *managerMetrics

	mu      sync.RWMutex
	lease   sessionstore.Lease
	self    sessionstore.Member
	members map[string]sessionstore.Member // by address
	// gone holds, per member, a channel closed when that member leaves.
	gone map[sessionstore.Member]chan struct{}
	// viewChanged is closed (and replaced) whenever the view changes.
	viewChanged chan struct{}
	ring        *Ring
	bindings    bindingCache   // by document key
	loads       map[string]int // cached bindings per owner address
	// orphans are keys whose owner was seen to leave; binding one of them
	// here is a takeover.
	orphans map[string]struct{}
	stopped bool
	// draining: the node hands its documents on and takes no new ones
	// (see drain.go).
	draining bool
	// suspicions are the judgements of members under way (suspect.go).
	suspicions map[sessionstore.Member]*suspicion
	suspects   *suspectMetrics
	// evictedAddrs are the addresses this node evicted and has not reached
	// since: it evicts them no more on its own evidence (suspect.go).
	evictedAddrs map[string]struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Manager; Start registers it.
func New(cfg Config) (*Manager, error) {
	if cfg.Store == nil {
		return nil, errors.New("affinity: Config.Store is required")
	}
	if _, err := ParseSessionKey(SessionKey(cfg.AdvertiseAddr)); err != nil {
		return nil, fmt.Errorf("affinity: advertise address %q: %w", cfg.AdvertiseAddr, err)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnLost == nil {
		cfg.OnLost = func([]string) {}
	}
	if cfg.HeartbeatMisses <= 0 {
		cfg.HeartbeatMisses = DefaultHeartbeatMisses
	}
	if cfg.Dial == nil {
		cfg.Dial = dialTCP
	}
	m := &Manager{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "affinity", "node", cfg.AdvertiseAddr),
		metrics:     newManagerMetrics(cfg.Registerer),
		members:     map[string]sessionstore.Member{},
		gone:        map[sessionstore.Member]chan struct{}{},
		viewChanged: make(chan struct{}),
		ring:        NewRing(nil, cfg.LoadFactor),
		bindings:    newBindingCache(),
		loads:       map[string]int{},
		orphans:     map[string]struct{}{},
		done:        make(chan struct{}),

		suspicions:   map[sessionstore.Member]*suspicion{},
		suspects:     newSuspectMetrics(cfg.Registerer),
		evictedAddrs: map[string]struct{}{},
	}
	m.store = &meteredStore{Store: cfg.Store, m: m.metrics}
	return m, nil
}

// Start registers the node and begins following membership. It returns once
// the node sees itself as a member, so the first placement can choose it.
func (m *Manager) Start(ctx context.Context) error {
	lease, err := m.store.Register(ctx, m.cfg.AdvertiseAddr, m.cfg.TTL)
	if err != nil {
		return fmt.Errorf("affinity: register %s: %w", m.cfg.AdvertiseAddr, err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	events, err := m.store.WatchMembers(runCtx)
	if err != nil {
		cancel()
		_ = lease.Revoke(ctx)
		return fmt.Errorf("affinity: watch members: %w", err)
	}
	m.mu.Lock()
	m.lease, m.self, m.cancel = lease, lease.Member(), cancel
	m.mu.Unlock()
	m.apply(sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: lease.Member()})
	go m.run(runCtx, events)
	if m.cfg.HeartbeatInterval > 0 {
		go m.heartbeat(runCtx)
	}
	return nil
}

// SessionKey is this node's session key.
func (m *Manager) SessionKey() string { return SessionKey(m.cfg.AdvertiseAddr) }

// Addr is this node's advertised address.
func (m *Manager) Addr() string { return m.cfg.AdvertiseAddr }

// Gone returns a channel that is closed when the member now at addr leaves
// (its lease ended or it left gracefully); it is closed already if addr is
// not a member. A call relayed to an owner stops waiting on it then, rather
// than hang on a node that froze.
func (m *Manager) Gone(addr string) <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.members[addr]; ok {
		if ch, ok := m.gone[mem]; ok {
			return ch
		}
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Members lists the live members' addresses, sorted.
func (m *Manager) Members() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.members))
}

// Owner returns the owner of the document key, binding it to a node chosen
// by placement if it has no live owner. Concurrent callers on any node get
// the same answer: the session store's compare-and-set decides.
func (m *Manager) Owner(ctx context.Context, key string) (Owner, error) {
	if o, ok := m.cached(key); ok {
		return o, nil
	}
	b, ok, err := m.store.Resolve(ctx, key)
	if err != nil {
		return Owner{}, fmt.Errorf("affinity: resolve %q: %w", key, err)
	}
	if !ok || !m.live(b.Owner) {
		if b, err = m.bind(ctx, key); err != nil {
			return Owner{}, err
		}
	}
	if err := m.awaitMember(ctx, b.Owner); err != nil {
		return Owner{}, fmt.Errorf("affinity: owner of %q: %w", key, err)
	}
	return m.remember(b)
}

// awaitMember waits until mem, which the store has just named as a live
// owner, is in this node's view. A store that polls membership (the mongo
// store) can name a member that joined before this node's view shows it;
// routing to it then would find no record of it (Gone reports an unknown
// member as gone at once) and fail the call. It waits at most a TTL.
func (m *Manager) awaitMember(ctx context.Context, mem sessionstore.Member) error {
	timer := time.NewTimer(m.cfg.TTL)
	defer timer.Stop()
	for {
		m.mu.RLock()
		known := mem == m.self || m.members[mem.Addr] == mem
		changed := m.viewChanged
		m.mu.RUnlock()
		if known {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%s#%d is not in this node's view yet: %w: %w", mem.Addr, mem.Incarnation, sessionstore.ErrUnavailable, ctx.Err())
		case <-timer.C:
			return fmt.Errorf("%s#%d is not in this node's view: %w", mem.Addr, mem.Incarnation, sessionstore.ErrUnavailable)
		}
	}
}

// Forget drops the cached binding of key, so the next Owner asks the store.
// Callers use it when the cached owner turned out wrong (it refused or could
// not be reached).
func (m *Manager) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(key)
}

// Fenced tells the manager that the database refused this node's epoch for
// key: a newer owner epoch has claimed the document. If the store still
// binds key to this node, that binding is older than what the database has
// seen (a store that lost writes in a failover, or nodes that do not share
// one store), so it is released; the next Owner then binds the document
// afresh with a larger epoch, and whichever node the store names owns it.
func (m *Manager) Fenced(ctx context.Context, key string) {
	m.mu.Lock()
	b, ok := m.bindings.get(key)
	m.dropLocked(key)
	self := m.self
	m.mu.Unlock()
	m.metrics.lost.Inc()
	if ok && b.Owner == self {
		if err := m.store.Release(ctx, b); err != nil && !errors.Is(err, sessionstore.ErrNotOwner) {
			m.log.Warn("release fenced binding", "key", key, "err", err)
		}
	}
}

// Stop releases this node's bindings, so their documents move at once rather
// than after the TTL, and revokes the lease.
func (m *Manager) Stop(ctx context.Context) error {
	m.mu.Lock()
	if m.stopped || m.lease == nil {
		m.stopped = true
		m.mu.Unlock()
		return nil
	}
	m.stopped = true
	cancel := m.cancel
	m.mu.Unlock()
	// Stop following the lease first: the revocation below must not look
	// like a lost lease, which would register the node again.
	cancel()
	<-m.done

	m.mu.Lock()
	var own []sessionstore.Binding
	for k, b := range m.bindings.all() {
		if b.Owner == m.self {
			own = append(own, b)
			m.dropLocked(k)
		}
	}
	lease := m.lease
	m.mu.Unlock()

	var errs []error
	for _, b := range own {
		if err := m.store.Release(ctx, b); err != nil && !errors.Is(err, sessionstore.ErrNotOwner) {
			errs = append(errs, fmt.Errorf("release %q: %w", b.Key, err))
		}
	}
	if err := lease.Revoke(ctx); err != nil {
		errs = append(errs, fmt.Errorf("revoke lease: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("affinity: stop: %w", err)
	}
	return nil
}

// Abandon stops the manager without releasing or revoking anything, as a
// crashed node would: its lease runs out after the TTL once the store
// client stops renewing it, and only then can others take its documents.
func (m *Manager) Abandon() {
	m.mu.Lock()
	if m.stopped || m.lease == nil {
		m.stopped = true
		m.mu.Unlock()
		return
	}
	m.stopped = true
	cancel := m.cancel
	m.mu.Unlock()
	cancel()
	<-m.done
}

// Holds reports whether this node still owns key at epoch, as far as its
// cache knows: false once a hand-off or a loss dropped the binding, even
// before the store has moved it. A call served here under that owner epoch
// checks it where it changes state a hand-off copies (channel sessions).
func (m *Manager) Holds(key string, epoch int64) bool {
	o, ok := m.cached(key)
	return ok && o.Self && o.Epoch == epoch
}

// cached returns a binding from the cache if it is still valid.
func (m *Manager) cached(key string) (Owner, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.bindings.get(key)
	if !ok || !m.liveLocked(b.Owner) {
		return Owner{}, false
	}
	return m.ownerLocked(b), true
}

func (m *Manager) live(mem sessionstore.Member) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.liveLocked(mem)
}

// liveLocked: this node while its lease lives, others while in the view.
func (m *Manager) liveLocked(mem sessionstore.Member) bool {
	if m.lease == nil {
		return false
	}
	if mem == m.self {
		select {
		case <-m.lease.Done():
			return false
		default:
			return !m.stopped
		}
	}
	return m.members[mem.Addr] == mem
}

func (m *Manager) ownerLocked(b sessionstore.Binding) Owner {
	return Owner{Addr: b.Owner.Addr, SessionKey: SessionKey(b.Owner.Addr), Epoch: b.Epoch, Self: b.Owner == m.self}
}

// bind places key and binds it; the store returns the winner if another
// node bound it first.
func (m *Manager) bind(ctx context.Context, key string) (sessionstore.Binding, error) {
	m.mu.RLock()
	if m.stopped || m.lease == nil {
		m.mu.RUnlock()
		return sessionstore.Binding{}, ErrStopped
	}
	target, ok := m.placeLocked(key)
	self := m.self
	m.mu.RUnlock()
	if !ok {
		target = self
	}
	b, err := m.store.Bind(ctx, key, target)
	if errors.Is(err, sessionstore.ErrNotMember) && target != self {
		// The chosen node died since the view was updated: take it here.
		b, err = m.store.Bind(ctx, key, self)
	}
	if err != nil {
		// The store's error names the key.
		return sessionstore.Binding{}, fmt.Errorf("affinity: %w", err)
	}
	m.metrics.binds.Add(1)
	return b, nil
}

func (m *Manager) remember(b sessionstore.Binding) (Owner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return Owner{}, ErrStopped
	}
	m.dropLocked(b.Key)
	m.bindings.put(b)
	m.loads[b.Owner.Addr]++
	if b.Owner == m.self {
		m.metrics.owned.Inc()
		if _, ok := m.orphans[b.Key]; ok {
			m.metrics.takeovers.Inc()
		}
	}
	delete(m.orphans, b.Key)
	return m.ownerLocked(b), nil
}

func (m *Manager) dropLocked(key string) {
	b, ok := m.bindings.get(key)
	if !ok {
		return
	}
	m.bindings.delete(key)
	if m.loads[b.Owner.Addr]--; m.loads[b.Owner.Addr] <= 0 {
		delete(m.loads, b.Owner.Addr)
	}
	if b.Owner == m.self {
		m.metrics.owned.Dec()
	}
}

// run follows membership and this node's lease until the manager stops.
func (m *Manager) run(ctx context.Context, events <-chan sessionstore.MemberEvent) {
	defer close(m.done)
	for {
		m.mu.RLock()
		leaseDone := m.lease.Done()
		m.mu.RUnlock()
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return
				}
				// The watch broke; follow a fresh one.
				events = m.rewatch(ctx)
				continue
			}
			m.apply(ev)
		case <-leaseDone:
			if ctx.Err() != nil {
				return
			}
			m.leaseLost(ctx)
		}
	}
}

func (m *Manager) rewatch(ctx context.Context) <-chan sessionstore.MemberEvent {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, m.cfg.TTL) {
		events, err := m.store.WatchMembers(ctx)
		if err == nil {
			return events
		}
		m.log.Warn("membership watch failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			ch := make(chan sessionstore.MemberEvent)
			close(ch)
			return ch
		case <-time.After(delay):
		}
	}
}

// apply updates the view. A member that left takes its cached bindings
// with it; they are resolved again on next use.
func (m *Manager) apply(ev sessionstore.MemberEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch ev.Type {
	case sessionstore.MemberJoined:
		old, ok := m.members[ev.Member.Addr]
		if ok && old == ev.Member {
			return
		}
		if ok {
			m.leftLocked(old)
		}
		m.dropOwnerLocked(ev.Member.Addr)
		m.members[ev.Member.Addr] = ev.Member
		m.gone[ev.Member] = make(chan struct{})
	case sessionstore.MemberLeft:
		if m.members[ev.Member.Addr] != ev.Member {
			return
		}
		delete(m.members, ev.Member.Addr)
		m.leftLocked(ev.Member)
		for k, b := range m.bindings.all() {
			if b.Owner == ev.Member && len(m.orphans) < maxOrphans {
				m.orphans[k] = struct{}{}
			}
		}
		m.dropOwnerLocked(ev.Member.Addr)
	}
	m.ring = NewRing(slices.Collect(maps.Keys(m.members)), m.cfg.LoadFactor)
	m.metrics.members.Set(float64(len(m.members)))
	close(m.viewChanged)
	m.viewChanged = make(chan struct{})
}

// leftLocked closes the channel that tells relays to mem that it has gone.
func (m *Manager) leftLocked(mem sessionstore.Member) {
	if ch, ok := m.gone[mem]; ok {
		close(ch)
		delete(m.gone, mem)
	}
}

func (m *Manager) dropOwnerLocked(addr string) {
	for k, b := range m.bindings.all() {
		if b.Owner.Addr == addr && b.Owner != m.self {
			m.dropLocked(k)
		}
	}
}

// leaseLost drops every binding of this node, tells the server, and
// registers again under a new incarnation so the node can serve again.
func (m *Manager) leaseLost(ctx context.Context) {
	m.mu.Lock()
	var keys []string
	for k, b := range m.bindings.all() {
		if b.Owner == m.self {
			keys = append(keys, k)
			m.dropLocked(k)
		}
	}
	old := m.self
	delete(m.members, old.Addr)
	m.leftLocked(old)
	stopped := m.stopped
	m.mu.Unlock()
	m.log.Warn("lease lost; documents released", "documents", len(keys))
	m.metrics.lost.Add(float64(len(keys)))
	if len(keys) > 0 {
		m.cfg.OnLost(keys)
	}
	if stopped {
		return
	}
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, m.cfg.TTL) {
		// Bounded: this runs on the manager's goroutine, and a store that
		// hangs must not stop it from following membership meanwhile.
		rctx, cancel := context.WithTimeout(ctx, m.cfg.TTL)
		lease, err := m.store.Register(rctx, m.cfg.AdvertiseAddr, m.cfg.TTL)
		cancel()
		if err == nil {
			m.mu.Lock()
			m.lease, m.self = lease, lease.Member()
			m.mu.Unlock()
			m.apply(sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: lease.Member()})
			m.log.Info("registered again", "incarnation", lease.Member().Incarnation)
			return
		}
		m.log.Warn("register again failed; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
