package integration_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// channelBench is a channel with n watching sessions on one server, reached
// over gRPC: the streams share a few HTTP/2 connections (as many browsers
// share one per origin), so n streams do not cost n TCP connections.
type channelBench struct {
	c        v1connect.YorkieServiceClient
	key      string
	arrivals chan time.Time
}

// benchConns is how many HTTP/2 connections the watchers share.
const benchConns = 16

func newChannelBench(b *testing.B, n int, want api.ChannelEvent_Type) *channelBench {
	srv := servertest.Start(b)
	cb := &channelBench{
		c:        servertest.Client(b, srv, servertest.GRPC),
		key:      wire.UniqueKey(b, "room"),
		arrivals: make(chan time.Time, n),
	}
	// Every session is attached before any stream opens: the only events
	// the streams carry are then the benchmark's own.
	ids := make([]string, n)
	for i := range ids {
		r := newReplica(b, cb.c)
		attachChannel(b, cb.c, r.ID, cb.key)
		ids[i] = r.ID
	}
	conns := make([]v1connect.YorkieServiceClient, benchConns)
	for i := range conns {
		conns[i] = servertest.Client(b, srv, servertest.GRPC)
	}
	for i, id := range ids {
		ctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		stream, err := conns[i%len(conns)].Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: id, Resources: []*api.ResourceDescriptor{channelResource(cb.key)}}))
		wire.Must(b, err, "watch")
		if !stream.Receive() || stream.Msg().GetInitialization() == nil {
			b.Fatalf("watch did not start with an initialization: %v", stream.Err())
		}
		go func() {
			defer stream.Close()
			for stream.Receive() {
				if stream.Msg().GetEvent().GetChannelEvent().GetEvent().GetType() == want {
					cb.arrivals <- time.Now()
				}
			}
		}()
	}
	return cb
}

// await collects n arrivals after start.
func (cb *channelBench) await(b *testing.B, n int, start time.Time, into *[]time.Duration) {
	for range n {
		select {
		case at := <-cb.arrivals:
			*into = append(*into, at.Sub(start))
		case <-time.After(wire.WaitTimeout):
			b.Fatalf("a watcher got no event within %s", wire.WaitTimeout)
		}
	}
}

func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	pct := func(p int) float64 {
		i := min(len(latencies)-1, len(latencies)*p/100)
		return float64(latencies[i].Microseconds())
	}
	b.ReportMetric(pct(50), "p50-us")
	b.ReportMetric(pct(99), "p99-us")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds()), "max-us")
}

// BenchmarkChannelBroadcastLatency measures the time from the start of a
// Broadcast call to its arrival at each of the channel's watchers.
func BenchmarkChannelBroadcastLatency(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			cb := newChannelBench(b, n, api.ChannelEvent_TYPE_BROADCAST)
			sender := newReplica(b, cb.c)
			attachChannel(b, cb.c, sender.ID, cb.key)
			req := &api.BroadcastRequest{ClientId: sender.ID, ChannelKey: cb.key, Topic: "cursor", Payload: []byte(`{"x":10,"y":20}`)}
			latencies := make([]time.Duration, 0, b.N*n)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				_, err := cb.c.Broadcast(context.Background(), connect.NewRequest(req))
				wire.Must(b, err, "broadcast")
				cb.await(b, n, start, &latencies)
			}
			b.StopTimer()
			reportLatencies(b, latencies)
		})
	}
}

// BenchmarkChannelCountLatency measures the time from the start of an
// attach (or detach) of one more client to the new count arriving at each of
// the channel's watchers.
func BenchmarkChannelCountLatency(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			cb := newChannelBench(b, n, api.ChannelEvent_TYPE_PRESENCE)
			joiner := newReplica(b, cb.c)
			latencies := make([]time.Duration, 0, b.N*n)
			session := ""
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if i%2 == 0 {
					resp, err := cb.c.AttachChannel(context.Background(), connect.NewRequest(&api.AttachChannelRequest{ClientId: joiner.ID, ChannelKey: cb.key}))
					wire.Must(b, err, "attach")
					session = resp.Msg.GetSessionId()
				} else {
					_, err := cb.c.DetachChannel(context.Background(), connect.NewRequest(&api.DetachChannelRequest{ClientId: joiner.ID, ChannelKey: cb.key, SessionId: session}))
					wire.Must(b, err, "detach")
				}
				cb.await(b, n, start, &latencies)
			}
			b.StopTimer()
			reportLatencies(b, latencies)
		})
	}
}
