package redis

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp"
)

// connWaitLimit is how long a command on the pool's shared path may wait for
// a connection before it is withdrawn and queued again.
//
// radix's pool wakes one waiting caller per connection it adds back. When all
// of its connections are discarded at once (after a failover every one of
// them answers READONLY) and more callers than connections are waiting, the
// callers that were not woken keep waiting until their deadline although the
// pool has connections again. A command that has not reached a connection
// within connWaitLimit is therefore withdrawn, which is safe because nothing
// was sent, and tried again.
const connWaitLimit = 50 * time.Millisecond

// attempt records whether one try of a command has reached a connection.
type attempt struct {
	state atomic.Int32
}

const (
	attemptWaiting int32 = iota
	attemptStarted
	attemptWithdrawn
)

type attemptKey struct{}

// errWithdrawn refuses a command whose attempt was withdrawn before it
// reached the connection. It is usable: nothing was written.
var errWithdrawn = resp.ErrConnUsable{Err: errors.New("command withdrawn while waiting for a connection")}

// startAttempt marks the attempt carried by ctx as started; it returns false
// if the attempt was withdrawn, in which case nothing may be sent.
func startAttempt(ctx context.Context) bool {
	att, _ := ctx.Value(attemptKey{}).(*attempt)
	if att == nil || att.state.CompareAndSwap(attemptWaiting, attemptStarted) {
		return true
	}
	return att.state.Load() == attemptStarted
}

// doShared runs a on the pool's shared path, withdrawing and repeating a try
// that found no connection within connWaitLimit.
func (s *Store) doShared(ctx context.Context, a radix.Action) error {
	for {
		att := new(attempt)
		tryCtx, cancel := context.WithCancel(context.WithValue(ctx, attemptKey{}, att))
		timer := time.AfterFunc(connWaitLimit, func() {
			if att.state.CompareAndSwap(attemptWaiting, attemptWithdrawn) {
				s.withdrawnTries.Add(1)
				cancel()
			}
		})
		err := s.pool.Do(tryCtx, a)
		timer.Stop()
		cancel()
		if err == nil || att.state.Load() != attemptWithdrawn {
			return err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
	}
}
