package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// renewRetry is the pause between failed renewals while the lease lasts.
const renewRetry = 200 * time.Millisecond

// lease is a node's membership: an etcd lease that the store renews.
type lease struct {
	s      *Store
	member sessionstore.Member
	id     clientv3.LeaseID
	ttl    time.Duration // as granted by etcd
	done   chan struct{}

	// deadline is when etcd may expire the lease at the earliest, in Unix
	// nanoseconds: TTL after the last successful renewal was sent.
	deadline atomic.Int64

	// stopCtx ends renewal (Revoke, Close, tests); stop cancels it.
	stopCtx context.Context
	stop    context.CancelFunc

	revoked atomic.Bool
	endOnce sync.Once
}

var _ sessionstore.Lease = (*lease)(nil)

// Member returns the registration the lease keeps alive.
func (l *lease) Member() sessionstore.Member { return l.member }

// Done is closed when the lease has ended: revoked, found gone, not renewed
// in time, or run out after renewal stopped.
func (l *lease) Done() <-chan struct{} { return l.done }

// end closes Done once, logging why when the lease was not revoked.
func (l *lease) end(reason string) {
	l.endOnce.Do(func() {
		close(l.done)
		if reason != "" {
			l.s.log.Warn("session lease ended", "addr", l.member.Addr,
				"lease", fmt.Sprintf("%016x", int64(l.id)), "reason", reason)
		}
	})
}

func (l *lease) deadlineTime() time.Time { return time.Unix(0, l.deadline.Load()) }

// renewOnce renews the lease once and moves the deadline on success.
func (l *lease) renewOnce(ctx context.Context) error {
	sent := time.Now()
	resp, err := l.s.cli.KeepAliveOnce(ctx, l.id)
	if err != nil {
		return err
	}
	next := sent.Add(time.Duration(resp.TTL) * time.Second).UnixNano()
	// Renewals may overlap (benchmarks); the deadline never moves back.
	for {
		cur := l.deadline.Load()
		if next <= cur || l.deadline.CompareAndSwap(cur, next) {
			return nil
		}
	}
}

// keepAlive renews the lease every TTL/3 and retries failures until the
// deadline. When renewal is stopped without a revoke it waits for the lease
// to run out before closing Done.
func (l *lease) keepAlive() {
	interval := max(l.ttl/3, 100*time.Millisecond)
	wait := time.NewTimer(interval)
	defer wait.Stop()
	for {
		select {
		case <-l.stopCtx.Done():
			l.runOut()
			return
		case <-wait.C:
		}
		deadline := l.deadlineTime()
		if !time.Now().Before(deadline) {
			l.end("not renewed within its TTL")
			return
		}
		ctx, cancel := context.WithDeadline(l.stopCtx, deadline)
		err := l.renewOnce(ctx)
		cancel()
		switch {
		case err == nil:
			wait.Reset(interval)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			// Also when a Revoke is under way: its answer may be lost.
			reason := "etcd no longer has the lease"
			if l.revoked.Load() {
				reason = ""
			}
			l.end(reason)
			return
		case l.stopCtx.Err() != nil:
			// Loop again to take the stop branch.
			wait.Reset(0)
		default:
			l.s.log.Debug("session lease renewal failed", "addr", l.member.Addr, "err", err)
			wait.Reset(min(renewRetry, time.Until(deadline)))
		}
	}
}

// runOut closes Done when the lease has surely run out, unless something
// else (Revoke) ends it first.
func (l *lease) runOut() {
	t := time.NewTimer(time.Until(l.deadlineTime()))
	defer t.Stop()
	select {
	case <-t.C:
		l.end("renewal stopped and the TTL ran out")
	case <-l.done:
	}
}

// stopRenewal stops renewing without revoking; the lease runs out on its own.
func (l *lease) stopRenewal() { l.stop() }

// Revoke deletes the lease in etcd, and with it the member record and every
// binding it owns. Done is closed when Revoke returns nil. A failed Revoke
// leaves the lease as it was.
func (l *lease) Revoke(ctx context.Context) error {
	op := "revoke lease of " + l.member.Addr
	if err := l.s.check(ctx, op); err != nil {
		return err
	}
	select {
	case <-l.done:
		// Already ended. A lease lost to failed renewals may still live in
		// etcd until its TTL runs out; revoke it there too if etcd answers,
		// so its bindings go now, but the caller's wish is met either way.
		if !l.revoked.Swap(true) {
			_, _ = l.s.cli.Revoke(ctx, l.id)
		}
		return nil
	default:
	}
	l.revoked.Store(true)
	_, err := l.s.cli.Revoke(ctx, l.id)
	switch {
	case err == nil, errors.Is(err, rpctypes.ErrLeaseNotFound):
	default:
		l.revoked.Store(false)
		return l.s.fail(ctx, op, err)
	}
	l.stop()
	l.end("")
	l.s.mu.Lock()
	delete(l.s.leases, l)
	l.s.mu.Unlock()
	return nil
}
