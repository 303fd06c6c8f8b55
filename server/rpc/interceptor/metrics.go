package interceptor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
)

// Metrics is a connect.Interceptor that records, per procedure and result
// code, how many calls the server handled and how long they took. For Watch
// streams the duration is the stream's lifetime.
type Metrics struct {
	handled  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	streams  *prometheus.GaugeVec
}

// NewMetrics registers the RPC metrics (yorkie_rpc_*) on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "yorkie",
			Subsystem: "rpc",
			Name:      "handled_total",
			Help:      "RPCs completed by the server, by procedure and result code.",
		}, []string{"procedure", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "yorkie",
			Subsystem: "rpc",
			Name:      "duration_seconds",
			Help:      "Time to handle an RPC (the stream lifetime for streams), by procedure and result code.",
			Buckets:   []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 60, 300, 3600},
		}, []string{"procedure", "code"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "yorkie",
			Subsystem: "rpc",
			Name:      "open_streams",
			Help:      "Server streams (Watch) open now, by procedure.",
		}, []string{"procedure"}),
	}
	for _, c := range []prometheus.Collector{m.handled, m.duration, m.streams} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register rpc collector: %w", err)
		}
	}
	return m, nil
}

// observe records one finished call.
func (m *Metrics) observe(procedure string, start time.Time, err error) {
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	m.handled.WithLabelValues(procedure, code).Inc()
	m.duration.WithLabelValues(procedure, code).Observe(time.Since(start).Seconds())
}

// okObservers holds the series of one procedure's successful calls, looked up
// once instead of on every call.
type okObservers struct {
	once     sync.Once
	handled  prometheus.Counter
	duration prometheus.Observer
}

// WrapUnary records unary calls. Connect wraps each procedure's handler once,
// so the returned function serves a single procedure.
func (m *Metrics) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	var ok okObservers
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		spec := req.Spec()
		if spec.IsClient {
			return next(ctx, req)
		}
		start := time.Now()
		resp, err := next(ctx, req)
		if err != nil {
			m.observe(spec.Procedure, start, err)
			return resp, err
		}
		ok.once.Do(func() {
			ok.handled = m.handled.WithLabelValues(spec.Procedure, "ok")
			ok.duration = m.duration.WithLabelValues(spec.Procedure, "ok")
		})
		ok.handled.Inc()
		ok.duration.Observe(time.Since(start).Seconds())
		return resp, err
	}
}

// WrapStreamingClient leaves client streams alone: this is a server interceptor.
func (m *Metrics) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler records server streams and counts the open ones.
func (m *Metrics) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		procedure := conn.Spec().Procedure
		start := time.Now()
		open := m.streams.WithLabelValues(procedure)
		open.Inc()
		return streamconn.Finish(ctx, next(ctx, conn), func(_ context.Context, err error) {
			open.Dec()
			m.observe(procedure, start, err)
		})
	}
}
