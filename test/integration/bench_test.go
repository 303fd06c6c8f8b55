package integration_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// BenchmarkWatchChangedLatency measures the time from the start of a push to
// the CHANGED event arriving at each watcher, over Connect JSON like the JS
// SDK, and reports its median and 99th percentile.
func BenchmarkWatchChangedLatency(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) {
			srv := servertest.Start(b)
			c := servertest.Client(b, srv, servertest.ConnectJSON)
			docKey := wire.UniqueKey(b, "doc")
			writer := newReplica(b, c)
			writer.MustAttach(docKey)

			// Every watcher attaches before any stream opens, so the only CHANGED a
			// stream can carry is the writer's: an attach seen by an open stream
			// would queue a CHANGED that absorbs the writer's next one.
			watchers := make([]*wire.Replica, n)
			for i := range watchers {
				watchers[i] = newReplica(b, c)
				watchers[i].MustAttach(docKey)
			}
			arrivals := make(chan time.Time, n)
			for _, r := range watchers {
				ctx, cancel := context.WithCancel(context.Background())
				b.Cleanup(cancel)
				stream, err := c.Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: r.ID,
					Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{
						Document: &api.DocumentDescriptor{DocumentId: r.DocID}}}}}))
				wire.Must(b, err, "watch")
				if !stream.Receive() || stream.Msg().GetInitialization() == nil {
					b.Fatalf("watch did not start with an initialization: %v", stream.Err())
				}
				go func() {
					defer stream.Close()
					for stream.Receive() {
						if stream.Msg().GetEvent().GetDocEvent().GetEvent().GetType() == changed {
							arrivals <- time.Now()
						}
					}
				}()
			}
			latencies := make([]time.Duration, 0, b.N*n)
			b.ResetTimer()
			for range b.N {
				writer.Edit(1)
				start := time.Now()
				writer.MustPushPull()
				for range n {
					select {
					case at := <-arrivals:
						latencies = append(latencies, at.Sub(start))
					case <-time.After(wire.WaitTimeout):
						b.Fatalf("a watcher got no CHANGED within %s", wire.WaitTimeout)
					}
				}
			}
			b.StopTimer()
			slices.Sort(latencies)
			pct := func(p int) float64 {
				i := min(len(latencies)-1, len(latencies)*p/100)
				return float64(latencies[i].Microseconds())
			}
			b.ReportMetric(pct(50), "p50-us")
			b.ReportMetric(pct(99), "p99-us")
		})
	}
}

// processCPU returns the CPU time (user and system) this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pushPullLoop runs b.N PushPull round trips of one change each.
func pushPullLoop(b *testing.B, c v1connect.YorkieServiceClient) {
	r := newReplica(b, c)
	r.MustAttach(wire.UniqueKey(b, "doc"))
	ctx := context.Background()
	for range b.N {
		r.Edit(1)
		if _, err := r.PushPull(ctx); err != nil {
			b.Fatalf("pushpull: %v", err)
		}
	}
}

// BenchmarkPushPull measures a PushPull round trip carrying one change over
// loopback. In-process, cpu-us/op is the whole process's CPU per call, client
// included. The child-server variants run the server in its own process and
// report server-cpu-us/op and client-cpu-us/op apart, for every protocol;
// connect-json sends the headers of the JS SDK running on Node's fetch, the
// path most clients take.
func BenchmarkPushPull(b *testing.B) {
	for _, p := range []servertest.Protocol{servertest.ConnectProto, servertest.ConnectJSON} {
		b.Run("in-process/"+p.String(), func(b *testing.B) {
			srv := servertest.Start(b)
			c := servertest.Client(b, srv, p)
			b.ReportAllocs()
			b.ResetTimer()
			before := processCPU(b)
			pushPullLoop(b, c)
			used := processCPU(b) - before
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
	for _, p := range servertest.Protocols() {
		b.Run("child-server/"+p.String(), func(b *testing.B) {
			addr, pid := startChildServer(b, "")
			opts := p.ClientOptions()
			if p == servertest.ConnectJSON {
				opts = append(opts, connect.WithInterceptors(sdkHeaders{}))
			}
			c := v1connect.NewYorkieServiceClient(servertest.HTTPClient(b, p), "http://"+addr, opts...)
			b.ResetTimer()
			serverBefore := childCPU(b, pid)
			before := processCPU(b)
			pushPullLoop(b, c)
			clientUsed := processCPU(b) - before
			serverUsed := childCPU(b, pid) - serverBefore
			b.ReportMetric(float64(serverUsed.Microseconds())/float64(b.N), "server-cpu-us/op")
			b.ReportMetric(float64(clientUsed.Microseconds())/float64(b.N), "client-cpu-us/op")
		})
	}
}

// BenchmarkRPCPaths measures what the RPC port's fast paths save, in one
// run: the server's CPU for the JS SDK's commonest exchange, over Connect
// JSON on HTTP/1.1 with the SDK's headers, one client pushing a change and
// another pulling it, so that requests and answers both carry a change. The
// server runs as a child process with both fast paths, with either one off,
// and with both off; server-cpu-us/op is its CPU per push and pull.
func BenchmarkRPCPaths(b *testing.B) {
	for _, v := range []struct{ name, stock string }{
		{"fast", ""},
		{"stock-json", "json"},
		{"stock-http1", "http1"},
		{"stock", "http1,json"},
	} {
		b.Run(v.name, func(b *testing.B) {
			addr, pid := startChildServer(b, v.stock)
			p := servertest.ConnectJSON
			opts := append(p.ClientOptions(), connect.WithInterceptors(sdkHeaders{}))
			c := v1connect.NewYorkieServiceClient(servertest.HTTPClient(b, p), "http://"+addr, opts...)
			key := wire.UniqueKey(b, "doc")
			writer, reader := newReplica(b, c), newReplica(b, c)
			writer.MustAttach(key)
			reader.MustAttach(key)
			b.ResetTimer()
			before := childCPU(b, pid)
			for range b.N {
				writer.Edit(1)
				writer.MustPushPull()
				if pulled := reader.MustPushPull(); len(pulled.GetChanges()) != 1 {
					b.Fatalf("the reader pulled %d changes, want the writer's one", len(pulled.GetChanges()))
				}
			}
			used := childCPU(b, pid) - before
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "server-cpu-us/op")
		})
	}
}

// sdkHeaders adds to unary calls the request headers the JS SDK sends from
// Node's fetch, so the server parses what it parses in production.
type sdkHeaders struct{}

func (sdkHeaders) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h := req.Header()
		h.Set("Accept", "*/*")
		h.Set("Accept-Language", "*")
		h.Set("Sec-Fetch-Mode", "cors")
		h.Set("User-Agent", "node")
		h.Set("Accept-Encoding", "gzip, deflate")
		h.Set("X-Yorkie-User-Agent", "@yorkie-js/sdk/0.7.7")
		return next(ctx, req)
	}
}

func (sdkHeaders) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (sdkHeaders) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// childBinaryEnv names another build of this test binary to run as the child
// server, so two server builds compare in one benchmark run.
const childBinaryEnv = "YORKIE_INTEGRATION_CHILD_BINARY"

// startChildServer runs this test binary as a server process and returns its
// address and process ID; it stops when the benchmark ends. stock lists the
// RPC port's fast paths the child serves without (see childStockEnv); env
// is added to its environment.
func startChildServer(b *testing.B, stock string, env ...string) (string, int) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc to read a child's CPU time")
	}
	bin := os.Args[0]
	if other := os.Getenv(childBinaryEnv); other != "" {
		bin = other
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), childServerEnv+"=1", childStockEnv+"="+stock), env...)
	stdin, err := cmd.StdinPipe()
	wire.Must(b, err, "child stdin")
	stdout, err := cmd.StdoutPipe()
	wire.Must(b, err, "child stdout")
	cmd.Stderr = os.Stderr
	wire.Must(b, cmd.Start(), "start child server")
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	wire.Must(b, err, "read child server address")
	return strings.TrimSpace(line), cmd.Process.Pid
}

// childCPU reads a process's user and system CPU time from /proc.
func childCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	wire.Must(b, err, "read child stat")
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line, in clock ticks.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse child stat %q", s)
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}
