package affinity

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

type managerMetrics struct {
	storeCalls atomic.Uint64
	latency    *prometheus.HistogramVec
	owned      prometheus.Gauge
	members    prometheus.Gauge
	binds      prometheus.Counter
	takeovers  prometheus.Counter
	lost       prometheus.Counter
	handoffs   prometheus.Counter
}

func newManagerMetrics(reg prometheus.Registerer) *managerMetrics {
	mm := &managerMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yorkie_sessionstore_call_seconds",
			Help:    "Latency of session store calls by operation and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9),
		}, []string{"op", "outcome"}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yorkie_affinity_bindings_owned",
			Help: "Documents this node owns, as far as its binding cache knows.",
		}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yorkie_affinity_members",
			Help: "Live cluster members in this node's view.",
		}),
		binds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_binds_total",
			Help: "Bindings created or taken over by this node's placement.",
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_takeovers_total",
			Help: "Documents this node bound after seeing their previous owner leave.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_bindings_lost_total",
			Help: "Documents this node stopped owning through lease loss or fencing.",
		}),
		handoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_handoffs_total",
			Help: "Documents a draining node handed on to their next owner.",
		}),
	}
	if reg != nil {
		reg.MustRegister(mm.latency, mm.owned, mm.members, mm.binds, mm.takeovers, mm.lost, mm.handoffs)
	}
	return mm
}

// StoreCalls is the number of session store calls the manager has made; the
// owner's steady state must not add to it.
func (m *Manager) StoreCalls() uint64 { return m.metrics.storeCalls.Load() }

// meteredStore counts and times every call the manager makes to the store.
type meteredStore struct {
	sessionstore.Store
	m *managerMetrics
}

// observe records one call; it takes the address of the call's named
// error, since a deferred call's arguments are evaluated at the defer.
func (s *meteredStore) observe(op string, start time.Time, err *error) {
	s.m.storeCalls.Add(1)
	outcome := "ok"
	if *err != nil {
		outcome = "error"
	}
	s.m.latency.WithLabelValues(op, outcome).Observe(time.Since(start).Seconds())
}

func (s *meteredStore) Register(ctx context.Context, addr string, ttl time.Duration) (l sessionstore.Lease, err error) {
	defer s.observe("register", time.Now(), &err)
	return s.Store.Register(ctx, addr, ttl)
}

func (s *meteredStore) Resolve(ctx context.Context, key string) (b sessionstore.Binding, ok bool, err error) {
	defer s.observe("resolve", time.Now(), &err)
	return s.Store.Resolve(ctx, key)
}

func (s *meteredStore) Bind(ctx context.Context, key string, owner sessionstore.Member) (b sessionstore.Binding, err error) {
	defer s.observe("bind", time.Now(), &err)
	return s.Store.Bind(ctx, key, owner)
}

func (s *meteredStore) Release(ctx context.Context, b sessionstore.Binding) (err error) {
	defer s.observe("release", time.Now(), &err)
	return s.Store.Release(ctx, b)
}

func (s *meteredStore) WatchMembers(ctx context.Context) (ch <-chan sessionstore.MemberEvent, err error) {
	defer s.observe("watch_members", time.Now(), &err)
	return s.Store.WatchMembers(ctx)
}
