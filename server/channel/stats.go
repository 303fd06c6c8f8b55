package channel

import "github.com/yorkie-affinity/yorkie/server/project"

// KeySessions is the number of sessions held on exactly one channel key.
type KeySessions struct {
	ProjectID string
	Key       string
	Sessions  int
}

// Sessions lists the channel keys that hold sessions on this node, with the
// sessions on exactly each key (not its sub-channels), for metrics.
func (m *Manager) Sessions() []KeySessions {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]KeySessions, 0, len(m.nodes))
	for scoped, n := range m.nodes {
		if n.own <= 0 {
			continue
		}
		id, key := project.SplitScopedKey(scoped)
		out = append(out, KeySessions{ProjectID: id, Key: key, Sessions: n.own})
	}
	return out
}
