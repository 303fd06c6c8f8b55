package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Register implements sessionstore.Store. The member key gets a PX TTL of ttl
// rounded up to a whole millisecond; the lease renews it every ttl/3.
func (s *Store) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	if addr == "" {
		return nil, errors.New("redis register: empty address")
	}
	ms := ttlMillis(ttl)
	if ms < 3 {
		return nil, fmt.Errorf("redis register %s: ttl %v is below 3ms", addr, ttl)
	}
	// The lease is counted from before the request: Redis starts the TTL
	// later than this, so the local lease never outlives the key.
	start := time.Now()
	var incText string
	err := s.do(ctx, s.scripts.register.Cmd(&incText,
		[]string{s.counterKey, s.membersKey},
		addr, strconv.FormatInt(ms, 10), s.channel, s.memberPrefix))
	if err != nil {
		return nil, s.wrapErr("register", err)
	}
	inc, err := strconv.ParseInt(incText, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("redis register %s: incarnation %q: %w", addr, incText, sessionstore.ErrMalformed)
	}
	l := &lease{
		s:       s,
		member:  sessionstore.Member{Addr: addr, Incarnation: inc},
		ttl:     time.Duration(ms) * time.Millisecond,
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	l.ctx, l.stop = context.WithCancel(s.base)
	if !s.spawn(func() { l.keepAlive(start) }) {
		// Closed meanwhile: the key expires after the TTL.
		l.stop()
		return nil, fmt.Errorf("redis register %s: %w", addr, fault.ErrShuttingDown)
	}
	return l, nil
}

// ttlMillis rounds ttl up to whole milliseconds.
func ttlMillis(ttl time.Duration) int64 {
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}

// renew extends m's member key if it still holds m's incarnation; ok is false
// if it does not (the lease is gone).
func (s *Store) renew(ctx context.Context, m sessionstore.Member, ttl time.Duration) (ok bool, err error) {
	var n int64
	err = s.do(ctx, s.scripts.renew.Cmd(&n, []string{s.memberKey(m)},
		strconv.FormatInt(m.Incarnation, 10), strconv.FormatInt(ttlMillis(ttl), 10)))
	if err != nil {
		return false, s.wrapErr("renew", err)
	}
	return n == 1, nil
}

// lease is a registration kept alive by keepAlive.
type lease struct {
	s      *Store
	member sessionstore.Member
	ttl    time.Duration

	ctx  context.Context // cancelled by Revoke and by Store.Close
	stop context.CancelFunc

	done     chan struct{} // closed when the lease has ended
	stopped  chan struct{} // closed when keepAlive has returned
	doneOnce sync.Once
}

func (l *lease) Member() sessionstore.Member { return l.member }

func (l *lease) Done() <-chan struct{} { return l.done }

func (l *lease) end() { l.doneOnce.Do(func() { close(l.done) }) }

// keepAlive renews the lease every ttl/3 until it is revoked, or lost: the
// member key no longer holds our incarnation, or no renewal succeeded for a
// whole TTL (counted from the start of the last successful request).
func (l *lease) keepAlive(lastOK time.Time) {
	defer close(l.stopped)
	defer l.end()
	sessionstore.KeepAlive{
		TTL:   l.ttl,
		Renew: func(ctx context.Context) (bool, error) { return l.s.renew(ctx, l.member, l.ttl) },
		// A failover: the stale connection is gone and the next try dials
		// the new master. Waiting between tries would spend the whole TTL
		// on the pool's other stale connections.
		RetryAtOnce: func(err error) bool { return errors.As(err, new(*ReadOnlyError)) },
		Gone:        "the member key expired or was taken over",
		Logger:      l.s.log.With("addr", l.member.Addr, "incarnation", l.member.Incarnation),
	}.Run(l.ctx, lastOK)
}

// Revoke implements sessionstore.Lease: it deletes the member key if it still
// holds this incarnation, then stops renewal and ends the lease. If the
// delete fails (Redis unreachable, ctx ended) the lease is left as it was and
// the error wraps sessionstore.ErrUnavailable; the caller may retry, or stop
// serving and let the key expire after the TTL.
func (l *lease) Revoke(ctx context.Context) error {
	var n int64
	err := l.s.do(ctx, l.s.scripts.revoke.Cmd(&n,
		[]string{l.s.memberKey(l.member), l.s.membersKey},
		strconv.FormatInt(l.member.Incarnation, 10), memberID(l.member), l.s.channel))
	if err != nil {
		return l.s.wrapErr("revoke", err)
	}
	l.stop()
	<-l.stopped
	return nil
}
