package affinity

import (
	"context"
	"fmt"
)

// Lead claims role for this node's current registration and reports
// whether this node holds it. The hold ends with the node's lease, so after
// a lost lease the node must lead again under its new registration, and a
// crashed node's role frees itself after the TTL.
func (m *Manager) Lead(ctx context.Context, role string) (bool, error) {
	m.mu.RLock()
	self, stopped := m.self, m.stopped
	m.mu.RUnlock()
	if stopped || self.Incarnation == 0 {
		return false, ErrStopped
	}
	holder, err := m.cfg.Store.Claim(ctx, role, self)
	if err != nil {
		return false, fmt.Errorf("affinity: lead %q: %w", role, err)
	}
	return holder == self, nil
}

// Resign gives role up if this node holds it, so another node can lead at
// once rather than after this node's lease ends.
func (m *Manager) Resign(ctx context.Context, role string) error {
	m.mu.RLock()
	self := m.self
	m.mu.RUnlock()
	if self.Incarnation == 0 {
		return nil
	}
	if err := m.cfg.Store.Resign(ctx, role, self); err != nil {
		return fmt.Errorf("affinity: resign %q: %w", role, err)
	}
	return nil
}
