package admin

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// throttle slows down repeated attempts by one key (a username or an
// address): free attempts pass, and from then on each must wait a backoff
// after the one before, doubling from base up to max. The counts live in
// the database (database.Strikes), so every node on it counts the same
// attempts: an attacker gains nothing by spreading guesses over the nodes.
// A key quiet for max starts again.
type throttle struct {
	name      string // prefix of the keys, one per throttle
	free      int
	base, max time.Duration
	db        database.Strikes
	now       func() time.Time
	// strikes counts strikes, to drop stale keys every pruneEvery.
	strikes atomic.Int64
}

// pruneEvery is how many strikes pass between two removals of stale keys:
// keys an attacker invents are dropped once quiet for max.
const pruneEvery = 1000

func newThrottle(name string, free int, base, max time.Duration, db database.Strikes, now func() time.Time) *throttle {
	return &throttle{name: name, free: free, base: base, max: max, db: db, now: now}
}

// backoff is the wait after the count-th attempt (0 while free).
func (t *throttle) backoff(count int) time.Duration {
	over := count - t.free + 1
	if over <= 0 {
		return 0
	}
	if over >= 30 {
		return t.max
	}
	return min(t.base<<(over-1), t.max)
}

// wait returns how long the key must still wait before its next attempt
// (0: it may try now).
func (t *throttle) wait(ctx context.Context, key string) (time.Duration, error) {
	count, last, err := t.db.FindStrikes(ctx, t.name+key)
	if err != nil {
		return 0, fmt.Errorf("throttle %s: %w", t.name, err)
	}
	now := t.now()
	if count == 0 || now.Sub(last) >= t.max {
		return 0, nil
	}
	return max(last.Add(t.backoff(count)).Sub(now), 0), nil
}

// strike records an attempt that counts against the key.
func (t *throttle) strike(ctx context.Context, key string) error {
	now := t.now()
	if _, err := t.db.AddStrike(ctx, t.name+key, now, t.max); err != nil {
		return fmt.Errorf("throttle %s: %w", t.name, err)
	}
	if t.strikes.Add(1)%pruneEvery == 0 {
		if _, err := t.db.RemoveStrikesBefore(ctx, now.Add(-t.max)); err != nil {
			return fmt.Errorf("throttle %s: %w", t.name, err)
		}
	}
	return nil
}

// forget clears the key's record: a successful log-in.
func (t *throttle) forget(ctx context.Context, key string) error {
	if err := t.db.ClearStrikes(ctx, t.name+key); err != nil {
		return fmt.Errorf("throttle %s: %w", t.name, err)
	}
	return nil
}

// hostOf returns the host of a peer address ("ip:port" or "ip").
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
