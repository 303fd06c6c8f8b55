package admin

import (
	"net"
	"sync"
	"time"
)

// throttle slows down repeated attempts by one key (a username or an
// address): free attempts pass, and from then on each must wait a backoff
// after the one before, doubling from base up to max. A key quiet for max
// is forgotten.
type throttle struct {
	free      int
	base, max time.Duration
	// size bounds the keys kept; when full, the stalest are dropped first
	// only after expired ones are.
	size int
	now  func() time.Time

	mu   sync.Mutex
	keys map[string]*strikes
}

type strikes struct {
	count int
	until time.Time // no attempt before
	last  time.Time
}

func newThrottle(free int, base, max time.Duration, size int, now func() time.Time) *throttle {
	return &throttle{free: free, base: base, max: max, size: size, now: now, keys: make(map[string]*strikes)}
}

// wait returns how long the key must still wait before its next attempt
// (0: it may try now).
func (t *throttle) wait(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.keys[key]
	if !ok {
		return 0
	}
	now := t.now()
	if now.Sub(s.last) >= t.max && !now.Before(s.until) {
		delete(t.keys, key)
		return 0
	}
	return max(s.until.Sub(now), 0)
}

// strike records an attempt that counts against the key.
func (t *throttle) strike(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	s, ok := t.keys[key]
	if !ok {
		if len(t.keys) >= t.size {
			t.prune(now)
		}
		s = &strikes{}
		t.keys[key] = s
	}
	s.count++
	s.last = now
	if over := s.count - t.free + 1; over > 0 {
		backoff := t.max
		if over < 30 {
			backoff = min(t.base<<(over-1), t.max)
		}
		s.until = now.Add(backoff)
	}
}

// forget clears the key's record: a successful log-in.
func (t *throttle) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, key)
}

// prune drops expired keys, then, if still full, every key: a flood of
// distinct keys must not grow memory. The caller holds mu.
func (t *throttle) prune(now time.Time) {
	for k, s := range t.keys {
		if now.Sub(s.last) >= t.max && !now.Before(s.until) {
			delete(t.keys, k)
		}
	}
	if len(t.keys) >= t.size {
		clear(t.keys)
	}
}

// hostOf returns the host of a peer address ("ip:port" or "ip").
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
