package interceptor

import (
	"context"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
)

// Activity is told about the calls of clients, so that housekeeping can
// find the ones that went away.
type Activity interface {
	// Seen records a call of the client. It must be cheap: every call
	// makes it.
	Seen(clientID string)
	// Watching records a Watch stream of the client until the returned
	// function is called.
	Watching(clientID string) (closed func())
}

// clientCall is every request message that names its client.
type clientCall interface{ GetClientId() string }

// activityInterceptor tells Activity about every call that names a client
// and succeeds, and about every server stream for as long as it is open
// once it has sent its first message. Calls that fail (an unknown client,
// a bad request) are not activity: a flood of made-up client IDs then costs
// the tracker nothing.
type activityInterceptor struct{ a Activity }

// NewActivity returns the interceptor telling a about clients' calls.
func NewActivity(a Activity) connect.Interceptor { return activityInterceptor{a: a} }

// WrapUnary records a client whose unary call succeeded.
func (i activityInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		if err == nil {
			if m, ok := req.Any().(clientCall); ok && m.GetClientId() != "" {
				i.a.Seen(m.GetClientId())
			}
		}
		return resp, err
	}
}

// WrapStreamingClient leaves client streams alone: this is a server interceptor.
func (i activityInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler records a stream's client while the stream is open.
func (i activityInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		w := &watching{a: i.a}
		// A stream detached from connect sends its messages on its own;
		// what outlives the call holds w alone, not connect's conn.
		streamconn.BeforeFirstMessage(ctx, w.sending)
		return streamconn.Finish(ctx, next(ctx, &watchedConn{StreamingHandlerConn: conn, w: w}), func(context.Context, error) { w.close() })
	}
}

// watching records a stream's client once the stream sends its first
// message (the initialization, which the server sends only to an
// activated, attached client), until the stream ends.
type watching struct {
	a        Activity
	clientID string
	closed   func()
}

// sending records the stream before its first message leaves: a client
// that has read it can count on the stream being activity already.
func (w *watching) sending() {
	if w.closed == nil && w.clientID != "" {
		w.closed = w.a.Watching(w.clientID)
	}
}

func (w *watching) close() {
	if w.closed != nil {
		w.closed()
	}
}

// watchedConn tells watching about the stream's request and messages.
type watchedConn struct {
	connect.StreamingHandlerConn
	w *watching
}

// Receive notes the client the stream's request names.
func (c *watchedConn) Receive(msg any) error {
	err := c.StreamingHandlerConn.Receive(msg)
	if m, ok := msg.(clientCall); ok && err == nil {
		c.w.clientID = m.GetClientId()
	}
	return err
}

// Send records the client as watching before the first message leaves.
func (c *watchedConn) Send(msg any) error {
	c.w.sending()
	return c.StreamingHandlerConn.Send(msg)
}
