package clustertest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// benchRounds is how many calls each path makes per benchmark iteration, so
// that a run with -benchtime 1x still gives percentiles worth reading.
const benchRounds = 200

// timedPushPull pushes one new change and pulls, returning the call's time.
func timedPushPull(b *testing.B, r *wire.Replica) time.Duration {
	r.Edit(1)
	start := time.Now()
	_, err := r.PushPull(context.Background())
	d := time.Since(start)
	if err != nil {
		b.Fatalf("pushpull: %v", err)
	}
	return d
}

// percentile returns the p-th percentile (0..1) of ds, sorting it.
func percentile(ds []time.Duration, p float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// alternate warms both replicas up, runs started (the baseline of what the
// caller counts), then times benchRounds PushPulls of x and of y per
// iteration, call by call, so that machine noise hits both paths alike.
func alternate(b *testing.B, x, y *wire.Replica, started func()) (xD, yD []time.Duration) {
	for range 20 { // warm up connections and caches
		timedPushPull(b, x)
		timedPushPull(b, y)
	}
	started()
	for b.Loop() {
		for range benchRounds {
			xD = append(xD, timedPushPull(b, x))
			yD = append(yD, timedPushPull(b, y))
		}
	}
	b.StopTimer()
	return xD, yD
}

// reportPercentiles reports the median and 99th percentile of ds as
// name-p50-us and name-p99-us and returns the median.
func reportPercentiles(b *testing.B, name string, ds []time.Duration) time.Duration {
	p50 := percentile(ds, 0.5)
	b.ReportMetric(micros(p50), name+"-p50-us")
	b.ReportMetric(micros(percentile(ds, 0.99)), name+"-p99-us")
	return p50
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkPushPullAffinityCost compares, in one run, a PushPull (one
// change pushed, Connect binary protobuf) on a document's owner in a
// three-node cluster on the memory session store with the same call on a
// server whose cluster layer is off. The two paths alternate call by call,
// so machine noise hits both alike; the ratio of their medians is the price
// of affinity on the owner's hot path. ns/op is one round of both calls.
func BenchmarkPushPullAffinityCost(b *testing.B) {
	plain := servertest.StartWith(b, []server.Option{server.WithRouter(servertest.OwnerRouter(0))}, func(cfg *server.Config) {
		cfg.ProfilingPort = -1
	})
	c := clustertest.Start(b, 3)
	docKey := wire.UniqueKey(b, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(b), docKey); err != nil {
		b.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(b, c, docKey).Node

	off := wire.NewReplica(b, servertest.Client(b, plain, servertest.ConnectProto))
	off.MustAttach(wire.UniqueKey(b, "doc"))
	on := wire.NewReplica(b, owner.ConnectProto())
	on.MustAttach(docKey)
	var calls uint64
	offD, onD := alternate(b, off, on, func() { calls = owner.Affinity().StoreCalls() })
	offP50, onP50 := reportPercentiles(b, "off", offD), reportPercentiles(b, "affinity", onD)
	b.ReportMetric(float64(onP50)/float64(offP50), "affinity/off-p50")
	b.ReportMetric(float64(owner.Affinity().StoreCalls()-calls), "store-calls")
}

// BenchmarkForwardOverhead compares, in one run, a PushPull sent straight
// to a document's owner with one sent through another node in forward mode
// (Connect binary protobuf, loopback). The two clients edit the same
// document and alternate, so each pulls one change of the other per call.
// added-p50-us is what the relay adds per call; the target is 500 us or
// less on loopback.
func BenchmarkForwardOverhead(b *testing.B) {
	c := clustertest.Start(b, 3)
	docKey := wire.UniqueKey(b, "doc")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(b), docKey); err != nil {
		b.Fatalf("bind %s: %v", docKey, err)
	}
	owner := ownerOf(b, c, docKey).Node
	via := otherNodes(c, owner)[0]

	direct := wire.NewReplica(b, owner.ConnectProto())
	direct.MustAttach(docKey)
	relayed := wire.NewReplica(b, via.ConnectProto())
	relayed.MustAttach(docKey)
	directD, relayedD := alternate(b, direct, relayed, func() {})
	if got := relayed.Header.Get(sessionKeyHeader); got != owner.SessionKey() {
		b.Fatalf("relayed answer names %q, want the owner %q", got, owner.SessionKey())
	}
	dP50, rP50 := reportPercentiles(b, "direct", directD), reportPercentiles(b, "forward", relayedD)
	b.ReportMetric(micros(rP50-dP50), "added-p50-us")
	b.ReportMetric(float64(rP50)/float64(dP50), "forward/direct-p50")
}
