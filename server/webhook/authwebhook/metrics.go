package authwebhook

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	cache    *prometheus.CounterVec
	attempts prometheus.Counter
	// busy counts checks refused because too many waited on webhooks.
	busy prometheus.Counter
	// hit and miss are cache's children, resolved once for the hot path.
	hit, miss, shared prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_auth_webhook_calls_total",
			Help: "Auth webhook checks that were not answered from the cache, by outcome.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yorkie_auth_webhook_call_seconds",
			Help:    "Time of auth webhook checks not answered from the cache, retries included, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}, []string{"outcome"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_auth_webhook_cache_total",
			Help: "Auth webhook checks by whether the cache answered (hit), a call already in flight did (shared), or neither (miss).",
		}, []string{"result"}),
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_auth_webhook_requests_total",
			Help: "HTTP requests sent to auth webhooks, retries included.",
		}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_auth_webhook_busy_total",
			Help: "Auth webhook checks failed closed at once because their project, or the node, had too many checks waiting on webhooks.",
		}),
	}
	m.hit, m.miss = m.cache.WithLabelValues("hit"), m.cache.WithLabelValues("miss")
	m.shared = m.cache.WithLabelValues("shared")
	if reg != nil {
		for _, c := range []prometheus.Collector{m.calls, m.latency, m.cache, m.attempts, m.busy} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("authwebhook metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(outcome string, d time.Duration) {
	m.calls.WithLabelValues(outcome).Inc()
	m.latency.WithLabelValues(outcome).Observe(d.Seconds())
}
