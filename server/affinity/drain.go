package affinity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// ErrNoSuccessor: a draining node found no other live member to hand a
// document to; the document stays here until the node stops and releases it.
var ErrNoSuccessor = errors.New("no other live member to hand the document to")

// Drain puts the manager in draining mode: from now on it places no new
// document on this node (while another member lives), and HandOff moves the
// documents it owns. Draining cannot be undone: the node is on its way out.
func (m *Manager) Drain() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.draining = true
}

// Draining reports whether Drain was called.
func (m *Manager) Draining() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.draining
}

// Owned lists the binding keys this node owns as far as its cache knows,
// sorted. A draining node hands these on.
func (m *Manager) Owned() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var keys []string
	for k, b := range m.bindings.all() {
		if b.Owner == m.self {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Successor returns the address of the member placement chooses, among the
// live members other than this node, to take key on: a draining node has it
// build the key's documents, then hands the key to it (HandOff).
func (m *Manager) Successor(key string) (string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	next, ok := m.successorLocked(key)
	if !ok {
		return "", fmt.Errorf("affinity: hand off %q: %w", key, ErrNoSuccessor)
	}
	return next.Addr, nil
}

// HandOff moves the binding of key from this node to the member at to (see
// Successor): the binding is released and bound afresh to that member, so
// the new binding has a larger epoch and the database fences any late
// write of this node. If another node binds key in between, its binding
// stands (the store's compare-and-set decides) and is returned; if to left
// meanwhile, placement chooses again. A key this node does not own is
// returned as it is bound.
func (m *Manager) HandOff(ctx context.Context, key, to string) (Owner, error) {
	m.mu.Lock()
	if m.stopped || m.lease == nil {
		m.mu.Unlock()
		return Owner{}, ErrStopped
	}
	b, ok := m.bindings.get(key)
	if !ok || b.Owner != m.self {
		m.mu.Unlock()
		return m.Owner(ctx, key)
	}
	next, ok := m.members[to]
	if !ok || to == m.self.Addr {
		m.mu.Unlock()
		return Owner{}, fmt.Errorf("affinity: hand off %q to %s: %w", key, to, ErrNoSuccessor)
	}
	m.dropLocked(key)
	m.mu.Unlock()

	if err := m.store.Release(ctx, b); err != nil && !errors.Is(err, sessionstore.ErrNotOwner) {
		// The binding may still be ours: let the next call find out.
		return Owner{}, fmt.Errorf("affinity: hand off %q: release: %w", key, err)
	}
	nb, err := m.store.Bind(ctx, key, next)
	if errors.Is(err, sessionstore.ErrNotMember) {
		// The successor left since the view was taken: let placement
		// choose again on the next call.
		return m.Owner(ctx, key)
	}
	if err != nil {
		return Owner{}, fmt.Errorf("affinity: hand off %q to %s: %w", key, next.Addr, err)
	}
	m.metrics.binds.Add(1)
	m.metrics.handoffs.Inc()
	return m.remember(nb)
}

// placeLocked chooses the member a new binding of key goes to: the ring's
// choice, or while draining the choice among the other members. ok is false
// when the chosen member is unknown (the caller binds to itself).
func (m *Manager) placeLocked(key string) (sessionstore.Member, bool) {
	if m.draining {
		if next, ok := m.successorLocked(key); ok {
			return next, true
		}
	}
	target, ok := m.members[m.ring.Place(key, m.loads)]
	return target, ok
}

// successorLocked chooses, among the live members other than this node,
// the one key goes to next.
func (m *Manager) successorLocked(key string) (sessionstore.Member, bool) {
	others := make([]string, 0, len(m.members))
	for addr := range maps.Keys(m.members) {
		if addr != m.self.Addr {
			others = append(others, addr)
		}
	}
	if len(others) == 0 {
		return sessionstore.Member{}, false
	}
	next, ok := m.members[NewRing(others, m.cfg.LoadFactor).Place(key, m.loads)]
	return next, ok
}
