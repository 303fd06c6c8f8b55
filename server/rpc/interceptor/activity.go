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
		wc := &watchedConn{StreamingHandlerConn: conn, a: i.a}
		// A stream detached from connect sends its messages on its own.
		streamconn.BeforeFirstMessage(ctx, wc.sending)
		return streamconn.Finish(ctx, next(ctx, wc), func(error) { wc.close() })
	}
}

// watchedConn records the stream's client once the stream sends its
// first message (the initialization, which the server sends only to an
// activated, attached client), until the stream ends.
type watchedConn struct {
	connect.StreamingHandlerConn
	a        Activity
	clientID string
	closed   func()
}

// Receive notes the client the stream's request names.
func (c *watchedConn) Receive(msg any) error {
	err := c.StreamingHandlerConn.Receive(msg)
	if m, ok := msg.(clientCall); ok && err == nil {
		c.clientID = m.GetClientId()
	}
	return err
}

// Send records the client as watching before the first message leaves.
func (c *watchedConn) Send(msg any) error {
	c.sending()
	return c.StreamingHandlerConn.Send(msg)
}

// sending records the stream before its first message leaves: a client
// that has read it can count on the stream being activity already.
func (c *watchedConn) sending() {
	if c.closed == nil && c.clientID != "" {
		c.closed = c.a.Watching(c.clientID)
	}
}

func (c *watchedConn) close() {
	if c.closed != nil {
		c.closed()
	}
}
