package sessionstore

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// KeepAlive is the renewal loop of a lease whose registration expires on
// its own unless renewed (the Redis and MongoDB stores'); each store says
// how one renewal is made.
type KeepAlive struct {
	// TTL is the lease's TTL; a renewal goes every TTL/3.
	TTL time.Duration
	// Renew renews the registration once; ok is false when the
	// registration is gone. An error wrapping ErrMalformed ends the lease;
	// after any other error the loop tries again.
	Renew func(ctx context.Context) (ok bool, err error)
	// RetryAtOnce reports an error after which the next try goes at once
	// rather than after a pause (nil: none): a failover that dropped the
	// connection the try used, so the next try dials the new server.
	RetryAtOnce func(error) bool
	// Gone is logged when Renew finds the registration gone.
	Gone string
	// Logger receives lease losses and failed renewals.
	Logger *slog.Logger
}

// Run renews the lease every TTL/3 until ctx ends or the lease is lost:
// Renew finds the registration gone or unreadable, or no renewal succeeded
// for a whole TTL counted from lastOK, the start of the last successful
// request (the registration's, at first). Each try is bounded by the time of
// the next one and by that deadline, and a failed try is repeated after
// half the interval, never past the deadline. It reports whether the lease
// ended because Renew found the registration gone.
func (k KeepAlive) Run(ctx context.Context, lastOK time.Time) (gone bool) {
	interval := k.TTL / 3
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
		now := time.Now()
		deadline := lastOK.Add(k.TTL)
		if !now.Before(deadline) {
			k.Logger.Warn("lease lost: no renewal succeeded within the TTL", "ttl", k.TTL)
			return false
		}
		tryCtx, cancel := context.WithDeadline(ctx, earliest(now.Add(interval), deadline))
		ok, err := k.Renew(tryCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return false
		case err == nil && ok:
			lastOK = now
			timer.Reset(interval)
		case err == nil:
			k.Logger.Warn("lease lost: " + k.Gone)
			return true
		case errors.Is(err, ErrMalformed):
			k.Logger.Warn("lease lost: the registration is unreadable", "err", err)
			return false
		case k.RetryAtOnce != nil && k.RetryAtOnce(err):
			k.Logger.Info("lease renewal failed; retrying at once", "err", err)
			timer.Reset(0)
		default:
			k.Logger.Warn("lease renewal failed; retrying", "err", err)
			timer.Reset(max(time.Until(earliest(now.Add(interval/2), deadline)), 0))
		}
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
