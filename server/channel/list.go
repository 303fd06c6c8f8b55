package channel

import (
	"sort"
	"strings"
)

// Summary is one channel as the AdminService lists it.
type Summary struct {
	// Key is the channel's key as the manager holds it (scoped by the
	// caller's project, see List).
	Key string
	// Sessions counts the sessions on exactly this key.
	Sessions int
}

// List returns, in key order, up to limit channels with sessions whose
// keys (as the manager holds them) start with prefix and pass keep. Each
// counts its own sessions, not those of its sub-channels.
func (m *Manager) List(prefix string, keep func(key string) bool, limit int) []Summary {
	m.mu.Lock()
	var out []Summary
	for key, n := range m.nodes {
		if n.own > 0 && strings.HasPrefix(key, prefix) && keep(key) {
			out = append(out, Summary{Key: key, Sessions: n.own})
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out[:min(len(out), max(limit, 0))]
}

// OwnCount returns the sessions on exactly the channel, without its
// sub-channels (Count includes them).
func (m *Manager) OwnCount(key string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.nodes[key]; ok {
		return int64(n.own)
	}
	return 0
}
