package affinity

// Suspicion: moving a crashed member's documents before its lease runs out.
//
// A member's lease ends a TTL after its last renewal (2 s by default, the
// least etcd grants with its default election timeout), and a store checks
// expiry on a timer of its own; the JS SDK then retries after 1 s. Waiting
// for the lease alone puts a crash 2 to 4 s away from its clients' next
// sync. Two signals come earlier:
//
//   - A refused connection. When a relay to a member, or a heartbeat, is
//     refused (ECONNREFUSED), the member's host has answered that nothing
//     listens on the member's port: its process is gone. A relay's refusal
//     is checked with one more connection of this node's own (a busy port
//     being reopened by a restart answers it), a heartbeat's is proof
//     already.
//   - Missed heartbeats. Every HeartbeatInterval this node opens a TCP
//     connection to each other member's advertised address. HeartbeatMisses
//     tries in a row that time out, or find no route, say the host is gone
//     or cut off. Local failures (this node out of descriptors) are no
//     evidence and do not count.
//
// Both are one node's view. A member cut off from this node only (a
// partition between two nodes, or a firewall that rejects this node's
// connections) but not from the store is healthy for everyone else. So
// before it evicts, this node asks witnesses (Config.Witness: other live
// members, at most maxWitnesses) to try a connection of their own: the
// first that reaches the member stops the eviction, the first that does
// not confirms it. A crashed process refuses everyone, so a witness answers
// within a round trip and a crash's failover is not slowed; a member cut off
// from this node only is not evicted at all. With no witness to ask (a
// two-node cluster) the node's own evidence stands; when witnesses were
// asked and none answered, this node is likely the one cut off, and the
// member's lease decides.
//
// Evicted on its own evidence, a member cut off from this node only
// registers again under a new incarnation within TTL/3, and evicting each
// new incarnation would keep it flapping, its clients reconnecting, for as
// long as the partition lasts. So this node evicts an address once: a later
// registration at an address it evicted is left to its lease (the store's
// judgement) until this node reaches the address again (a heartbeat
// answers), which shows the partition over or the node restarted, and fast
// eviction is back for its next crash. The price: in a lasting partition,
// the calls this node relays to that member fail until the partition heals,
// as they would to a member it cannot reach that it never evicted.
//
// A member found gone is evicted: the store ends its lease on the store's
// side (sessionstore.Evicter), which frees its bindings there, and this node
// drops it from its view at once, so the call that found the refusal can be
// routed again and bind the document to a live member within the same call.
// Every other node sees the member leave through the store's watch.
//
// Safety. Eviction is a judgement, and it can be wrong: a member cut off from
// this node but not from the store, or one whose port refused for another
// reason, may be alive and still believe it owns its documents until its
// next renewal finds the lease gone (up to TTL/3, then it drops them). An
// evicted owner must therefore be fenced before anyone else acknowledges a
// change of its documents, and it is, by the same mechanism that covers a
// lease that ran out while its owner was paused:
//
//  1. The store binds a document to one live member at a time, and the new
//     binding's epoch is larger than the evicted owner's (epochs only grow).
//  2. The new owner claims the document in the database with its epoch
//     (database.ClaimDocument) before it reads the log or serves a call;
//     from then on the database refuses every write with a smaller epoch
//     (ErrFenced), and the change log's unique (document, server_seq) key
//     lets only one of two racing appends at one server_seq in.
//  3. The old owner acknowledges a change only after its append succeeded.
//     An append that landed before the claim is in the log the new owner
//     reads after claiming; one after the claim is refused and never
//     acknowledged, so the client sends it again to the new owner.
//
// So no acknowledged change is lost and no two owners both acknowledge
// writes after the claim, whatever the eviction got wrong; a wrong eviction
// costs the evicted node's clients a reconnect, nothing more. What eviction
// must never do is evict a later registration of the same address: Evict
// names the incarnation.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// DefaultHeartbeatMisses is how many heartbeats in a row a member may miss
// before it is evicted.
const DefaultHeartbeatMisses = 3

// maxWitnesses bounds the members asked to confirm an eviction.
const maxWitnesses = 2

// HeartbeatFor is the heartbeat interval that goes with a lease TTL: an
// eighth of it, so three missed heartbeats (with their timeouts) come well
// before the lease would run out.
func HeartbeatFor(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return ttl / 8
}

// Eviction reasons, the label of yorkie_affinity_evictions_total.
const (
	reasonRefused   = "refused"
	reasonHeartbeat = "heartbeat"
)

// suspicion is one judgement of a member under way; callers that suspect
// the same member meanwhile wait for it.
type suspicion struct {
	done    chan struct{}
	evicted bool
}

type suspectMetrics struct {
	evictions *prometheus.CounterVec
	vetoes    prometheus.Counter
}

func newSuspectMetrics(reg prometheus.Registerer) *suspectMetrics {
	sm := &suspectMetrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_affinity_evictions_total",
			Help: "Members this node evicted before their lease ran out, by the evidence (refused, heartbeat).",
		}, []string{"reason"}),
	}
	sm.vetoes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "yorkie_affinity_evictions_vetoed_total",
		Help: "Evictions this node did not make because a witness reached the member.",
	})
	if reg != nil {
		reg.MustRegister(sm.evictions, sm.vetoes)
	}
	return sm
}

// Suspect tells the manager that a connection to the member at addr was
// refused. It checks with a connection of its own and, if that is refused
// too, evicts the member; it returns once the member is judged (or ctx
// ends) and reports whether addr is no longer a member in this node's view.
// Concurrent suspicions of one member share one judgement.
func (m *Manager) Suspect(ctx context.Context, addr string) bool {
	s, ok := m.suspect(addr, false)
	if !ok {
		return !m.isMember(addr)
	}
	select {
	case <-s.done:
		return s.evicted
	case <-ctx.Done():
		return false
	}
}

func (m *Manager) isMember(addr string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.members[addr]
	return ok
}

// suspect starts (or joins) the judgement of the member at addr; ok is
// false when there is nothing to judge (no such member, this node, stopped).
// proven says the caller saw a refusal that needs no second look.
func (m *Manager) suspect(addr string, proven bool) (*suspicion, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem, ok := m.members[addr]
	if !ok || mem == m.self || m.stopped {
		return nil, false
	}
	if _, ok := m.evictedAddrs[addr]; ok {
		// Evicted on this node's evidence before, and not reached since:
		// its lease decides (see the package comment on flapping).
		return nil, false
	}
	if s, ok := m.suspicions[mem]; ok {
		return s, true
	}
	s := &suspicion{done: make(chan struct{})}
	m.suspicions[mem] = s
	go m.judge(mem, s, proven)
	return s, true
}

// judge confirms a refusal unless proven and evicts mem if it holds.
func (m *Manager) judge(mem sessionstore.Member, s *suspicion, proven bool) {
	defer func() {
		m.mu.Lock()
		delete(m.suspicions, mem)
		m.mu.Unlock()
		close(s.done)
	}()
	if !proven {
		if err := m.probe(context.Background(), mem.Addr); !errors.Is(err, syscall.ECONNREFUSED) {
			m.log.Debug("suspected member answers", "member", mem.Addr, "err", err)
			return
		}
	}
	if m.corroborated(mem) {
		s.evicted = m.evict(mem, reasonRefused)
	}
}

// corroborated asks up to maxWitnesses other live members, at once, whether
// they reach mem, and reports whether mem may be evicted on this node's
// evidence: the first witness to answer decides; with no witness to ask,
// this node's evidence stands; when none answers, it does not (see the
// package comment).
func (m *Manager) corroborated(mem sessionstore.Member) bool {
	witnesses := m.witnesses(mem)
	if len(witnesses) == 0 {
		return true
	}
	// A witness's own dial is bounded by its heartbeat timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*m.heartbeatTimeout())
	defer cancel()
	type answer struct {
		witness string
		reached bool
		err     error
	}
	answers := make(chan answer, len(witnesses))
	for _, w := range witnesses {
		go func() {
			reached, err := m.cfg.Witness(ctx, w, mem.Addr)
			answers <- answer{w, reached, err}
		}()
	}
	for range witnesses {
		a := <-answers
		switch {
		case a.err != nil:
			m.log.Debug("witness did not answer", "member", mem.Addr, "witness", a.witness, "err", a.err)
		case a.reached:
			m.log.Info("member not evicted: a witness reaches it", "member", mem.Addr, "witness", a.witness)
			m.suspects.vetoes.Inc()
			return false
		default:
			return true
		}
	}
	m.log.Info("member not evicted: no witness answered", "member", mem.Addr, "witnesses", witnesses)
	return false
}

// witnesses returns up to maxWitnesses live members other than this node
// and mem, in address order; none without Config.Witness.
func (m *Manager) witnesses(mem sessionstore.Member) []string {
	if m.cfg.Witness == nil {
		return nil
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for addr := range m.members {
		if addr != m.self.Addr && addr != mem.Addr {
			out = append(out, addr)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), maxWitnesses)]
}

// Reaches tries a connection to the member at addr, as a heartbeat does,
// for another node that asks this one to witness (ClusterService Reach). An
// address that is not a member in this node's view is not reached, and not
// dialled: as far as this node knows, the member left or was evicted (say,
// by this node, which found it gone first). A failure of this node's own
// making (out of descriptors) is an error, not evidence.
func (m *Manager) Reaches(ctx context.Context, addr string) (bool, error) {
	if addr == m.Addr() {
		return true, nil
	}
	if !m.isMember(addr) {
		return false, nil
	}
	err := m.probe(ctx, addr)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.ECONNREFUSED), missed(err):
		return false, nil
	}
	return false, fmt.Errorf("affinity: reach %s: %w", addr, err)
}

// evict ends mem's lease in the store and drops it from this node's view.
func (m *Manager) evict(mem sessionstore.Member, reason string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.TTL)
	defer cancel()
	if err := m.store.Evict(ctx, mem); err != nil {
		m.log.Warn("evict member", "member", mem.Addr, "incarnation", mem.Incarnation, "reason", reason, "err", err)
		return false
	}
	m.log.Warn("member evicted before its lease ran out", "member", mem.Addr, "incarnation", mem.Incarnation, "reason", reason)
	m.suspects.evictions.WithLabelValues(reason).Inc()
	m.mu.Lock()
	m.evictedAddrs[mem.Addr] = struct{}{}
	m.mu.Unlock()
	m.apply(sessionstore.MemberEvent{Type: sessionstore.MemberLeft, Member: mem})
	return true
}

func (m *Manager) heartbeatTimeout() time.Duration {
	if m.cfg.HeartbeatInterval > 0 {
		return 2 * m.cfg.HeartbeatInterval
	}
	return HeartbeatFor(m.cfg.TTL) * 2
}

// heartbeat probes the other members every HeartbeatInterval until ctx ends.
func (m *Manager) heartbeat(ctx context.Context) {
	tick := time.NewTicker(m.cfg.HeartbeatInterval)
	defer tick.Stop()
	misses := map[sessionstore.Member]int{}
	type result struct {
		mem sessionstore.Member
		err error
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		m.mu.RLock()
		peers := make([]sessionstore.Member, 0, len(m.members))
		for _, mem := range m.members {
			if mem != m.self {
				peers = append(peers, mem)
			}
		}
		m.mu.RUnlock()
		results := make(chan result, len(peers))
		for _, p := range peers {
			go func() { results <- result{p, m.probe(ctx, p.Addr)} }()
		}
		seen := make(map[sessionstore.Member]bool, len(peers))
		for range peers {
			r := <-results
			seen[r.mem] = true
			switch {
			case ctx.Err() != nil:
				return
			case r.err == nil:
				delete(misses, r.mem)
				m.reached(r.mem.Addr)
			case errors.Is(r.err, syscall.ECONNREFUSED):
				delete(misses, r.mem)
				m.suspect(r.mem.Addr, true)
			case missed(r.err):
				if misses[r.mem]++; misses[r.mem] >= m.cfg.HeartbeatMisses {
					delete(misses, r.mem)
					if m.mayEvict(r.mem.Addr) {
						go func() {
							if m.corroborated(r.mem) {
								m.evict(r.mem, reasonHeartbeat)
							}
						}()
					}
				}
			}
		}
		for mem := range misses {
			if !seen[mem] {
				delete(misses, mem)
			}
		}
	}
}

// reached records that a heartbeat to addr was answered: this node's own
// evidence may evict the address again.
func (m *Manager) reached(addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.evictedAddrs, addr)
}

// mayEvict reports whether this node may evict the member at addr on its
// own evidence: it has not evicted the address before without reaching it
// since.
func (m *Manager) mayEvict(addr string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.evictedAddrs[addr]
	return !ok
}

// probe dials addr as a heartbeat does, bounded by the heartbeat timeout.
func (m *Manager) probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, m.heartbeatTimeout())
	defer cancel()
	return m.cfg.Dial(ctx, addr)
}

// missed reports whether a failed heartbeat says something about the peer:
// it timed out or found no route. Errors of this node's own making (out of
// descriptors, a closed manager) say nothing.
func missed(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) ||
		(errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// dialTCP is the default Config.Dial: a TCP connection to addr, closed at once.
func dialTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
