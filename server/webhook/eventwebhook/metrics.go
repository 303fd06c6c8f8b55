package eventwebhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	deliveries *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	changes    *prometheus.CounterVec
	requests   prometheus.Counter
	droppedBy  *prometheus.CounterVec
	// The changes children, resolved once for the hot path.
	scheduled, coalesced, dropped prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_event_webhook_deliveries_total",
			Help: "Event webhook deliveries by outcome (delivered, failed, refused, canceled).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yorkie_event_webhook_delivery_seconds",
			Help:    "Time of event webhook deliveries, retries included, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"outcome"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_event_webhook_changes_total",
			Help: "Document changes reported to the event webhook sender: scheduled an event, coalesced into a scheduled one, or dropped.",
		}, []string{"result"}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_event_webhook_requests_total",
			Help: "HTTP requests sent to event webhooks, retries included.",
		}),
		droppedBy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yorkie_event_webhook_dropped_total",
			Help: "Document changes not announced because the node's or the project's event backlog was full, by project.",
		}, []string{"project_id"}),
	}
	m.scheduled = m.changes.WithLabelValues("scheduled")
	m.coalesced = m.changes.WithLabelValues("coalesced")
	m.dropped = m.changes.WithLabelValues("dropped")
	if reg != nil {
		for _, c := range []prometheus.Collector{m.deliveries, m.latency, m.changes, m.requests, m.droppedBy} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("eventwebhook metrics: %w", err)
			}
		}
	}
	return m, nil
}
