package database

import (
	"context"
	"time"
)

// Strikes counts attempts per key (a username or an address, with a
// prefix naming the throttle), kept in the database so that every node on
// it counts the same attempts: the admin API's log-in and sign-up
// throttles. Counts are advisory: two strikes racing may both start a new
// count after a stale one, never lose a strike of a live count.
type Strikes interface {
	// AddStrike records an attempt by key at now and returns the key's
	// count of attempts with it. A key whose last attempt is window or
	// more before now (or that has none) starts a new count at 1.
	AddStrike(ctx context.Context, key string, now time.Time, window time.Duration) (int, error)
	// FindStrikes returns the key's count and the time of its last
	// attempt: 0 and the zero time when it has none.
	FindStrikes(ctx context.Context, key string) (int, time.Time, error)
	// ClearStrikes forgets the key; an unknown key is no error.
	ClearStrikes(ctx context.Context, key string) error
	// RemoveStrikesBefore forgets every key whose last attempt is before
	// before and returns how many, so that the keys an attacker invents do
	// not pile up.
	RemoveStrikesBefore(ctx context.Context, before time.Time) (int, error)
}
