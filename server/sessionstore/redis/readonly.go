package redis

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp/resp3"
)

// ReadOnlyError is returned for a command that a demoted master (now a
// replica) answered with READONLY. The connection that carried it has been
// closed, so the pool dials a new one through the configured address.
//
// It deliberately does not unwrap to the server's reply: radix keeps any
// connection whose error is a server reply, and this error must make it drop
// the connection on every path.
type ReadOnlyError struct {
	// Reply is the server's error reply, starting with "READONLY".
	Reply string
}

// Error returns the server's reply and says that the connection was dropped.
func (e *ReadOnlyError) Error() string {
	return e.Reply + " (connection discarded)"
}

// isReadOnlyReply reports whether err carries a READONLY error reply, which a
// replica sends for every write, also for a write made inside a Lua script.
func isReadOnlyReply(err error) (string, bool) {
	var se resp3.SimpleError
	if errors.As(err, &se) && strings.HasPrefix(se.S, "READONLY") {
		return se.S, true
	}
	var be resp3.BlobError
	if errors.As(err, &be) && strings.HasPrefix(string(be.B), "READONLY") {
		return string(be.B), true
	}
	return "", false
}

// guardedConn wraps every pooled connection. It refuses to send a command
// whose attempt was withdrawn (see connWaitLimit), and, when
// discardOnReadOnly is set (the default), it closes the connection when the
// server answers READONLY and returns a ReadOnlyError, which radix treats as
// a broken connection:
//   - on the pool's shared path the pool wrapper sees an error that is not
//     resp.ErrConnUsable and discards the connection after the command;
//   - on the exclusive path (WithConn, blocking commands) the pool discards a
//     connection only if the returned error is not a server reply, which a
//     ReadOnlyError is not; and should the caller swallow the error, the
//     closed connection fails its next command with a non-usable error and
//     is discarded then.
//
// Commands that were pipelined on the same connection behind the failing one
// fail as well (they were written to a replica). Explicit radix.Pipeline
// actions record their replies inside the pipeline, where this wrapper cannot
// see them; the store does not use them.
type guardedConn struct {
	radix.Conn
	discardOnReadOnly bool
	// discarded is called once, when the connection is closed for READONLY.
	discarded func(reply string)
	closed    atomic.Bool
}

// errConnDiscarded fails the commands that reach a guarded connection after
// it was closed for READONLY, until the pool has removed it. It is not a
// server reply, so radix discards the connection on every path.
var errConnDiscarded = errors.New("redis connection closed after the server answered READONLY")

// EncodeDecode implements radix.Conn.
func (c *guardedConn) EncodeDecode(ctx context.Context, m, u any) error {
	if !startAttempt(ctx) {
		return errWithdrawn
	}
	if c.closed.Load() {
		return errConnDiscarded
	}
	err := c.Conn.EncodeDecode(ctx, m, u)
	if err == nil || !c.discardOnReadOnly {
		return err
	}
	reply, ok := isReadOnlyReply(err)
	if !ok {
		if c.closed.Load() {
			// Pipelined behind the command that met READONLY.
			return errConnDiscarded
		}
		return err
	}
	if c.closed.CompareAndSwap(false, true) {
		_ = c.Conn.Close()
		if c.discarded != nil {
			c.discarded(reply)
		}
	}
	return &ReadOnlyError{Reply: reply}
}

// Do implements radix.Client so that actions performed on the guard itself
// also go through EncodeDecode above.
func (c *guardedConn) Do(ctx context.Context, a radix.Action) error {
	return a.Perform(ctx, c)
}
