package channel

import (
	"fmt"
	"time"
)

// HandedSession is one client's session on a channel, as a draining node
// hands it to the node its channel group moved to.
type HandedSession struct {
	ID string
	// Key is the channel's scoped key (project.ScopedKey).
	Key    string
	Client string
	// Age is the time since the session's attach or last refresh, TTL its
	// time to live from then.
	Age time.Duration
	TTL time.Duration
}

// GroupSessions returns the sessions of the channel group firstKeyPath (a scoped first key path),
// copied as they stand: what a draining node hands on before it releases
// the group.
func (m *Manager) GroupSessions(firstKeyPath string) []HandedSession {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []HandedSession
	for _, s := range m.sessions {
		if FirstKeyPath(s.key) == firstKeyPath {
			out = append(out, HandedSession{ID: s.id, Key: s.key, Client: s.client, Age: max(now.Sub(s.refreshed), 0), TTL: s.ttl})
		}
	}
	return out
}

// Import adds sessions handed on by the node this channel group moved from,
// keeping each one's remaining life, and returns how many it added. A
// session known here already, or whose client holds another session on the
// channel here (it attached again, or its heartbeat reached this node
// first), is kept as it is; one detached here lately (the detach reached
// this node ahead of the copy) or whose life ran out is dropped. Watchers of
// the channels get their new counts. The sessions are checked whole before
// any is added.
func (m *Manager) Import(sessions []HandedSession) (int, error) {
	for _, s := range sessions {
		if err := validateSession(s.Key, s.ID); err != nil {
			return 0, err
		}
		if s.Client == "" || s.Age < 0 || s.TTL <= 0 {
			return 0, fmt.Errorf("session %s on %q: client %q, age %v, ttl %v: %w", s.ID, s.Key, s.Client, s.Age, s.TTL, ErrInvalidSession)
		}
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errClosed
	}
	added := 0
	for _, s := range sessions {
		if s.Age > s.TTL {
			continue
		}
		if _, ok := m.sessions[s.ID]; ok {
			continue
		}
		if _, ok := m.byClient[clientChannel{s.Client, s.Key}]; ok {
			continue
		}
		if _, ok := m.detached[s.ID]; ok {
			// Its client detached it here after the old owner copied it.
			continue
		}
		m.addLocked(&session{id: s.ID, key: s.Key, client: s.Client, refreshed: now.Add(-s.Age), ttl: s.TTL})
		added++
	}
	return added, nil
}
