package server

import (
	"net"
	"time"

	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/rpc"
)

// Option adjusts how New builds a node in ways no operator sets: the seams
// tests (servertest, clustertest) use.
type Option func(*options)

type options struct {
	router                         rpc.Router
	clock                          func() time.Time
	onHousekeeping                 func(housekeeping.Report)
	rpcListener, profilingListener net.Listener
}

// WithRouter replaces the cluster layer with r, for tests that stage
// routing decisions themselves (say, two nodes that both believe they own
// a document, each with its own epoch in the routes it returns). The node
// then joins no cluster.
func WithRouter(r rpc.Router) Option { return func(o *options) { o.router = r } }

// WithClock replaces time.Now for housekeeping, the caches of projects and
// the admin API (tokens, throttles), so tests can move time on.
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithHousekeepingReports tells f the outcome of every housekeeping run on
// the node.
func WithHousekeepingReports(f func(housekeeping.Report)) Option {
	return func(o *options) { o.onHousekeeping = f }
}

// WithListeners serves the RPC port on rpcLn and, when the profiling port
// is enabled and profilingLn is not nil, the profiling port on profilingLn,
// instead of binding Config's ports; the server closes them.
func WithListeners(rpcLn, profilingLn net.Listener) Option {
	return func(o *options) { o.rpcListener, o.profilingListener = rpcLn, profilingLn }
}
