// Command yorkie-load drives a Yorkie server with synthetic clients and
// reports what it measured: memory per idle Watch stream (watch-idle), the
// delay from a push to the CHANGED event at the other watchers
// (changed-latency), PushPull throughput and server CPU per operation
// (pushpull), and long-lived clients attaching fresh documents over time
// (attach-churn).
//
// Every run is bounded in size and time, talks to one loopback address
// unless told otherwise, and prints a plain table (or JSON with -json).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"
)

const usage = `usage: yorkie-load <scenario> [flags]

scenarios:
  watch-idle       open N idle Watch streams and report server memory per stream
  changed-latency  measure push -> CHANGED delay at the other watchers
  pushpull         closed-loop PushPull throughput, latency and server CPU per op
  attach-churn     long-lived clients attaching fresh documents: rate and CPU per window

run "yorkie-load <scenario> -h" for the flags of a scenario.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// common holds the flags every scenario shares.
type common struct {
	addr        string
	metricsAddr string
	transport   string
	allowRemote bool
	jsonOut     bool
	timeout     time.Duration
	concurrency int
	verbose     bool
	gzip        bool
	sourceAddrs string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "RPC address of the server")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:8081", "profiling address of the server (/metrics, /debug/pprof)")
	fs.StringVar(&c.transport, "transport", string(connectJSONHTTP1), "connect-json-http1 (like the JS SDK: one TCP connection per stream) or grpc-h2c (multiplexed)")
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow non-loopback addresses")
	fs.BoolVar(&c.jsonOut, "json", false, "print the result as JSON instead of a table")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "upper bound on the whole run")
	fs.IntVar(&c.concurrency, "c", 64, "calls in flight while setting up clients and streams")
	fs.BoolVar(&c.verbose, "v", false, "log progress at debug level")
	fs.BoolVar(&c.gzip, "gzip", false, "accept gzipped answers (the JS SDK's answers are not compressed)")
	fs.StringVar(&c.sourceAddrs, "source-addrs", "", "comma-separated local IPs the connections are dialled from, in turn (e.g. 127.0.0.2,127.0.0.3): one source address has about 28,000 ephemeral ports towards one server address")
}

// check validates the shared flags.
func (c *common) check() error {
	for _, a := range []string{c.addr, c.metricsAddr} {
		if err := checkLoopback(a, c.allowRemote); err != nil {
			return err
		}
	}
	if _, err := parseTransport(c.transport); err != nil {
		return err
	}
	if _, err := parseSourceAddrs(c.sourceAddrs, c.allowRemote); err != nil {
		return err
	}
	if c.concurrency < 1 {
		return errors.New("-c must be at least 1")
	}
	return nil
}

// checkLoopback refuses addresses off this machine unless allowed, so a
// mistyped flag cannot load someone else's server.
func checkLoopback(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("address %q is not a loopback address (pass -allow-remote to load it anyway)", addr)
}

// parseSourceAddrs reads -source-addrs: loopback IPs unless remote
// addresses are allowed.
func parseSourceAddrs(list string, allowRemote bool) ([]net.IP, error) {
	if list == "" {
		return nil, nil
	}
	var ips []net.IP
	for a := range strings.SplitSeq(list, ",") {
		ip := net.ParseIP(strings.TrimSpace(a))
		if ip == nil {
			return nil, fmt.Errorf("-source-addrs: %q is not an IP address", a)
		}
		if !allowRemote && !ip.IsLoopback() {
			return nil, fmt.Errorf("-source-addrs: %s is not a loopback address (pass -allow-remote to use it anyway)", ip)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

// scenario is one subcommand: it registers its flags and runs.
type scenario struct {
	name  string
	flags func(fs *flag.FlagSet) func(ctx context.Context, c common, logger *slog.Logger) (result, error)
}

// result is what a scenario reports: a table and a JSON document.
type result interface {
	rows() [][2]string
}

// scenarioOf makes a scenario of a flag set's registration into a config of
// type C and the run that takes it.
func scenarioOf[C any, R result](name string, register func(*flag.FlagSet, *C), run func(context.Context, common, C, *slog.Logger) (R, error)) scenario {
	return scenario{name: name, flags: func(fs *flag.FlagSet) func(context.Context, common, *slog.Logger) (result, error) {
		var cfg C
		register(fs, &cfg)
		return func(ctx context.Context, c common, logger *slog.Logger) (result, error) {
			return run(ctx, c, cfg, logger)
		}
	}}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	scenarios := []scenario{
		scenarioOf("watch-idle", watchIdleFlags, runWatchIdle),
		scenarioOf("changed-latency", changedLatencyFlags, runChangedLatency),
		scenarioOf("pushpull", pushPullFlags, runPushPull),
		scenarioOf("attach-churn", attachChurnFlags, runAttachChurn),
	}
	var sc *scenario
	for i := range scenarios {
		if scenarios[i].name == args[0] {
			sc = &scenarios[i]
		}
	}
	if sc == nil {
		fmt.Fprintf(stderr, "yorkie-load: unknown scenario %q\n\n%s", args[0], usage)
		return 2
	}
	fs := flag.NewFlagSet("yorkie-load "+sc.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	runFn := sc.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "yorkie-load %s: %v\n", sc.name, err)
		return 2
	}
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	res, err := runFn(ctx, c, logger)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie-load %s: %v\n", sc.name, err)
		return 1
	}
	if c.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "yorkie-load %s: encode result: %v\n", sc.name, err)
			return 1
		}
		return 0
	}
	printTable(stdout, res.rows())
	return 0
}
