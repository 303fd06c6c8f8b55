package metrics

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
)

// interceptor records yorkie_rpc_server_handled_* for the calls of one
// service and, for the YorkieService, yorkie_user_agent_total.
type interceptor struct {
	m          *Metrics
	userAgents bool
}

// Interceptor returns a server interceptor recording the calls it wraps;
// with userAgents it also counts them by SDK and project (the call's
// project must be in its context by then, so it goes inside the
// interceptor that resolves it).
func (m *Metrics) Interceptor(userAgents bool) connect.Interceptor {
	return interceptor{m: m, userAgents: userAgents}
}

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if i.m == nil || req.Spec().IsClient {
			return next(ctx, req)
		}
		start := time.Now()
		res, err := next(ctx, req)
		if i.userAgents {
			i.m.UserAgent(req.Header(), project.FromContext(ctx), req.Spec().Procedure)
		}
		i.m.Handled(Unary, req.Spec().Procedure, err, time.Since(start))
		return res, err
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		if i.m == nil {
			return next(ctx, conn)
		}
		start := time.Now()
		// A detached stream's end outlives the request: it keeps the user
		// agent, not the request's header map.
		agent, procedure := conn.RequestHeader().Get(UserAgentHeader), conn.Spec().Procedure
		return streamconn.Finish(ctx, next(ctx, conn), func(ctx context.Context, err error) {
			if i.userAgents {
				i.m.UserAgent(http.Header{http.CanonicalHeaderKey(UserAgentHeader): {agent}}, project.FromContext(ctx), procedure)
			}
			i.m.Handled(ServerStream, procedure, err, time.Since(start))
		})
	}
}
