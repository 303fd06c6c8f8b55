package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// The tests run every scenario at a small size against an in-process server
// and check the counts the tool reports. They assert nothing about timing:
// performance is measured with the command, not by tests.

func testCommon(t *testing.T, tr transport) (common, *slog.Logger) {
	t.Helper()
	srv := servertest.Start(t, func(cfg *server.Config) { cfg.PprofEnabled = true })
	c := common{
		addr:        srv.RPCAddr(),
		metricsAddr: srv.ProfilingAddr(),
		transport:   string(tr),
		concurrency: 16,
	}
	return c, slog.New(slog.NewTextHandler(t.Output(), nil))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestWatchIdle(t *testing.T) {
	for _, tr := range []transport{connectJSONHTTP1, grpcH2C} {
		t.Run(string(tr), func(t *testing.T) {
			c, logger := testCommon(t, tr)
			res, err := runWatchIdle(testCtx(t), c, watchIdleConfig{streams: 200, docs: 20, settle: 100 * time.Millisecond}, logger)
			if err != nil {
				t.Fatal(err)
			}
			if res.Subscriptions != 200 {
				t.Errorf("subscriptions gauge = %v, want the 200 streams opened", res.Subscriptions)
			}
			if res.RSSStreams <= 0 || res.HeapStreams <= 0 || res.Goroutines <= res.GoroutinesIdle {
				t.Errorf("implausible server figures: %+v", res)
			}
			if res.StreamsPerSecond <= 0 {
				t.Errorf("setup rate %v, want > 0", res.StreamsPerSecond)
			}
		})
	}
}

func TestChangedLatency(t *testing.T) {
	for _, tr := range []transport{connectJSONHTTP1, grpcH2C} {
		t.Run(string(tr), func(t *testing.T) {
			c, logger := testCommon(t, tr)
			// One pusher per document at a modest rate, so no two CHANGED
			// events queue together and every push can be matched.
			cfg := changedConfig{watchers: 10, pushers: 1, docs: 3, pushes: 10, rate: 20, drain: 10 * time.Second}
			res, err := runChangedLatency(testCtx(t), c, cfg, logger)
			if err != nil {
				t.Fatal(err)
			}
			pushes := cfg.pushes * cfg.pushers * cfg.docs
			if res.Pushes != pushes || res.PushPull.Count != pushes {
				t.Errorf("pushes = %d (PushPull samples %d), want %d", res.Pushes, res.PushPull.Count, pushes)
			}
			// Every push reaches the other watchers of its document.
			want := pushes * cfg.watchers
			if res.Expected != want || res.Latency.Count != want || res.Missing != 0 {
				t.Errorf("deliveries expected %d, measured %d, missing %d; want %d, %d, 0",
					res.Expected, res.Latency.Count, res.Missing, want, want)
			}
			if res.Events == 0 || res.Events > want {
				t.Errorf("CHANGED events = %d, want 1..%d", res.Events, want)
			}
			if res.Latency.P50MS > res.Latency.P99MS || res.Latency.P99MS > res.Latency.MaxMS {
				t.Errorf("quantiles out of order: %+v", res.Latency)
			}
		})
	}
}

func TestPushPull(t *testing.T) {
	c, logger := testCommon(t, connectJSONHTTP1)
	cfg := pushPullConfig{clients: 10, docs: 3, duration: time.Minute, ops: 20}
	res, err := runPushPull(testCtx(t), c, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if want := cfg.clients * cfg.ops; res.Ops != want || res.Latency.Count != want {
		t.Errorf("ops = %d (latency samples %d), want %d", res.Ops, res.Latency.Count, want)
	}
	if res.HandlerP99MS <= 0 || res.HandlerP50MS > res.HandlerP99MS {
		t.Errorf("server handler quantiles p50 %v p99 %v, want 0 < p50 <= p99", res.HandlerP50MS, res.HandlerP99MS)
	}
	if res.ServerCPUSeconds < 0 || res.OpsPerSec <= 0 {
		t.Errorf("implausible figures: %+v", res)
	}
}

func TestRefusesRemoteAddress(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true,
		"10.0.0.1:8080": false, "example.com:8080": false, "nohost": false,
	} {
		if err := checkLoopback(addr, false); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
	if err := checkLoopback("10.0.0.1:8080", true); err != nil {
		t.Errorf("with -allow-remote: %v", err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"pushpull", "-addr", "10.0.0.1:8080"}, &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("exit code %d for a remote address, want 2 (stderr %q)", code, stderr.String())
	}
}

func TestCommandLineJSON(t *testing.T) {
	srv := servertest.Start(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"pushpull", "-addr", srv.RPCAddr(), "-metrics-addr", srv.ProfilingAddr(),
		"-clients", "2", "-n", "5", "-json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	var res pushPullResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("decode %q: %v", stdout.String(), err)
	}
	if res.Ops != 10 {
		t.Errorf("ops = %d, want 10", res.Ops)
	}
	if !strings.Contains(stderr.String(), "closed loop") {
		t.Errorf("no progress log on stderr: %q", stderr.String())
	}
}

func TestAttachChurn(t *testing.T) {
	c, logger := testCommon(t, connectJSONHTTP1)
	cfg := attachChurnConfig{clients: 4, duration: time.Minute, window: time.Minute, cycles: 15}
	res, err := runAttachChurn(testCtx(t), c, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(cfg.clients * cfg.cycles)
	if res.Cycles != want || int64(res.Latency.Count) != want {
		t.Errorf("cycles = %d (latency samples %d), want %d", res.Cycles, res.Latency.Count, want)
	}
	var sum int64
	for _, w := range res.Windows {
		sum += w.Cycles
	}
	if len(res.Windows) == 0 || sum != want || res.Windows[len(res.Windows)-1].Documents != want {
		t.Errorf("windows %+v, want their cycles to add up to %d", res.Windows, want)
	}
}
