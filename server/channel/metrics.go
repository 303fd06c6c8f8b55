package channel

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the channel gauges and counters of one node. A nil *Metrics
// records nothing.
type Metrics struct {
	sessions   prometheus.Gauge
	watching   prometheus.Gauge
	expiries   prometheus.Counter
	deliveries prometheus.Counter
}

// NewMetrics registers the channel metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yorkie_channel_sessions",
			Help: "Channel sessions this node holds.",
		}),
		watching: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yorkie_channel_watchers",
			Help: "Channel watch subscriptions open on this node.",
		}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_channel_sessions_expired_total",
			Help: "Channel sessions removed because they were not refreshed within the TTL.",
		}),
		deliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_channel_broadcast_deliveries_total",
			Help: "Broadcast messages handed to channel watchers.",
		}),
	}
	err := errors.Join(reg.Register(m.sessions), reg.Register(m.watching), reg.Register(m.expiries), reg.Register(m.deliveries))
	if err != nil {
		return nil, fmt.Errorf("register channel metrics: %w", err)
	}
	return m, nil
}

func (m *Metrics) setSessions(n int) {
	if m != nil {
		m.sessions.Set(float64(n))
	}
}

func (m *Metrics) watchers(delta int) {
	if m != nil {
		m.watching.Add(float64(delta))
	}
}

func (m *Metrics) expired(n int) {
	if m != nil {
		m.expiries.Add(float64(n))
	}
}

func (m *Metrics) broadcast(delivered int) {
	if m != nil {
		m.deliveries.Add(float64(delivered))
	}
}
