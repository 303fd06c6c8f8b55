package multiprocess_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// cpuTime is the user+system CPU time a process has used so far.
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("read CPU time of %d: %v", pid, err)
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 per second).
	rest := string(data[strings.LastIndexByte(string(data), ')')+2:])
	f := strings.Fields(rest)
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("parse CPU time of %d: %q", pid, rest)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// pidOf returns the process whose command line contains all of args.
func pidOf(b *testing.B, args ...string) int {
	b.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		words := strings.Split(string(cmd), "\x00")
		if !slices.ContainsFunc(args, func(a string) bool { return !slices.Contains(words, a) }) {
			return pid
		}
	}
	b.Fatalf("no process with %q in its command line", args)
	return 0
}

// BenchmarkPushPullByStore measures, per session store, a PushPull (one
// change, Connect JSON) in a three-process cluster on one FerretDB: sent to
// the document's owner and sent through another node (forward mode), the
// two alternating call by call. It reports each path's p50 and the CPU time
// of the three yorkie processes per call, and, over a second with no calls
// afterwards, the idle CPU of the three (lease renewals and membership
// watching). The owner's hot path makes no session store call with any
// store (affinity's TestOwnerHotPathMakesNoStoreCalls), so the store shows
// in the first call for a document and in the background only.
//
//	go test -run XXX -bench PushPullByStore -benchtime 300x ./test/multiprocess/
func BenchmarkPushPullByStore(b *testing.B) {
	for _, store := range []string{"etcd", "redis", "mongo"} {
		b.Run(store, func(b *testing.B) { benchPushPullOnStore(b, store) })
	}
}

func benchPushPullOnStore(b *testing.B, store string) {
	var storeArgs []string
	switch store {
	case "etcd":
		storeArgs = []string{"--session-store", "etcd", "--etcd-endpoints", strings.Join(testenv.StartEtcd(b), ",")}
	case "redis":
		storeArgs = []string{"--session-store", "redis", "--redis-addr", testenv.StartRedis(b).Addr}
	case "mongo":
		storeArgs = []string{"--session-store", "mongo"}
	}
	m := testenv.MongoURI(b)
	m.DropWhenDone(b, m.Database)
	nodes := make([]*Server, 3)
	byAddr := map[string]*Server{}
	for i := range nodes {
		nodes[i] = StartServer(b, ServerOptions{Name: fmt.Sprintf("%s-%d", store, i), MongoURI: m.URI, MongoDatabase: m.Database,
			Args: append([]string{"--node-ttl", "2s", "--rpc-addr", "127.0.0.1"}, storeArgs...)})
		byAddr[nodes[i].RPCAddr()] = nodes[i]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	key := fmt.Sprintf("cost-%s-%d", store, time.Now().UnixNano())

	first, err := wire.Activate(ctx, nodes[0].Client(b), "first")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := first.Attach(ctx, key); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds()), "first-attach-us")
	addr, err := affinity.ParseSessionKey(first.Header.Get("x-session-key"))
	if err != nil {
		b.Fatal(err)
	}
	owner := byAddr[addr]
	var via *Server
	for _, n := range nodes {
		if n != owner {
			via = n
			break
		}
	}
	direct, err := wire.Activate(ctx, owner.Client(b), "direct")
	if err != nil {
		b.Fatal(err)
	}
	relayed, err := wire.Activate(ctx, via.Client(b), "relayed")
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range []*wire.Replica{direct, relayed} {
		if _, err := r.Attach(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
	cpu := func() time.Duration {
		var sum time.Duration
		for _, n := range nodes {
			sum += cpuTime(b, n.Process.Pid())
		}
		return sum
	}
	ferret := pidOf(b, "-listen-addr", m.Addr)
	var directD, relayedD []time.Duration
	cpu0, ferret0 := cpu(), cpuTime(b, ferret)
	b.ResetTimer()
	for range b.N {
		for _, r := range []*wire.Replica{direct, relayed} {
			r.NewChange(nil)
			t0 := time.Now()
			if _, err := r.PushPull(ctx); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			if r == direct {
				directD = append(directD, d)
			} else {
				relayedD = append(relayedD, d)
			}
		}
	}
	b.StopTimer()
	perCall := (cpu() - cpu0) / time.Duration(2*b.N)
	ferretPerCall := (cpuTime(b, ferret) - ferret0) / time.Duration(2*b.N)
	slices.Sort(directD)
	slices.Sort(relayedD)
	b.ReportMetric(float64(percentile(directD, 0.5).Microseconds()), "owner-p50-us")
	b.ReportMetric(float64(percentile(relayedD, 0.5).Microseconds()), "forward-p50-us")
	b.ReportMetric(float64(perCall.Microseconds()), "yorkie-cpu-us/call")
	b.ReportMetric(float64(ferretPerCall.Microseconds()), "ferretdb-cpu-us/call")
	idle0, ferretIdle0 := cpu(), cpuTime(b, ferret)
	const idle = 3 * time.Second
	time.Sleep(idle) // measuring what the processes do when nobody calls
	b.ReportMetric(float64((cpu()-idle0).Microseconds())/3/idle.Seconds(), "idle-cpu-us/s/node")
	b.ReportMetric(float64((cpuTime(b, ferret)-ferretIdle0).Microseconds())/idle.Seconds(), "ferretdb-idle-cpu-us/s")
}
