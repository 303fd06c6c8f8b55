package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// watchIdleConfig sizes a watch-idle run.
type watchIdleConfig struct {
	streams int
	docs    int
	settle  time.Duration
	hold    time.Duration
}

// watchIdleResult is what watch-idle measured. Memory figures come from the
// server's /metrics after a forced GC.
type watchIdleResult struct {
	Transport        string  `json:"transport"`
	Streams          int     `json:"streams"`
	Docs             int     `json:"docs"`
	FileLimit        uint64  `json:"file_limit,omitempty"`
	SetupSeconds     float64 `json:"setup_seconds"`
	StreamsPerSecond float64 `json:"streams_per_second"`
	Subscriptions    float64 `json:"subscriptions"`
	// Server figures before any client, after activating and attaching the
	// clients, and with every stream open.
	RSSStart       float64 `json:"rss_start_bytes"`
	RSSAttached    float64 `json:"rss_attached_bytes"`
	RSSStreams     float64 `json:"rss_streams_bytes"`
	HeapStart      float64 `json:"heap_inuse_start_bytes"`
	HeapAttached   float64 `json:"heap_inuse_attached_bytes"`
	HeapStreams    float64 `json:"heap_inuse_streams_bytes"`
	StackAttached  float64 `json:"stack_inuse_attached_bytes"`
	StackStreams   float64 `json:"stack_inuse_streams_bytes"`
	GoroutinesIdle float64 `json:"goroutines_attached"`
	Goroutines     float64 `json:"goroutines_streams"`
	// Per-stream costs: the growth from the attached baseline divided by the
	// number of streams.
	RSSPerStream        float64 `json:"rss_per_stream_bytes"`
	HeapPerStream       float64 `json:"heap_inuse_per_stream_bytes"`
	StackPerStream      float64 `json:"stack_inuse_per_stream_bytes"`
	GoroutinesPerStream float64 `json:"goroutines_per_stream"`
	// Per-client costs: the clients' activation and attachment (the growth
	// from start to the attached baseline) divided by the number of clients,
	// one per stream.
	RSSPerClient  float64 `json:"rss_per_client_bytes"`
	HeapPerClient float64 `json:"heap_inuse_per_client_bytes"`
}

func watchIdleFlags(fs *flag.FlagSet, cfg *watchIdleConfig) {
	fs.IntVar(&cfg.streams, "n", 1000, "clients, each with one Watch stream")
	fs.IntVar(&cfg.docs, "docs", 100, "documents the clients are spread over")
	fs.DurationVar(&cfg.settle, "settle", 3*time.Second, "idle time after the last stream opened, before measuring")
	fs.DurationVar(&cfg.hold, "hold", 0, "keep the streams open this long after measuring (for profiling)")
}

// idleCollections is how many collections the server runs before the open
// streams are measured.
const idleCollections = 3

func runWatchIdle(ctx context.Context, c common, cfg watchIdleConfig, logger *slog.Logger) (*watchIdleResult, error) {
	if cfg.streams < 1 || cfg.docs < 1 {
		return nil, errors.New("watch-idle: -n and -docs must be at least 1")
	}
	f, limit, err := newFleet(c, cfg.streams)
	if err != nil {
		return nil, fmt.Errorf("watch-idle: %w", err)
	}
	defer f.close()
	res := &watchIdleResult{Transport: string(f.tr), Streams: cfg.streams, Docs: cfg.docs, FileLimit: limit}
	start, err := scrape(ctx, c.metricsAddr, true)
	if err != nil {
		return nil, fmt.Errorf("watch-idle: baseline: %w", err)
	}
	if err := f.attach(ctx, logger, cfg.streams, cfg.docs, func(i int) int { return i % cfg.docs }); err != nil {
		return nil, fmt.Errorf("watch-idle: %w", err)
	}
	// Close the pooled connections of the setup calls so that, over HTTP/1.1,
	// the descriptors and server goroutines counted later are the streams'.
	f.closeIdle()
	attached, err := scrape(ctx, c.metricsAddr, true)
	if err != nil {
		return nil, fmt.Errorf("watch-idle: attached baseline: %w", err)
	}

	began := time.Now()
	// Drain WATCHED events so the server never sees a slow reader.
	if err := f.watch(ctx, logger, func(_ int, stream *connect.ServerStreamForClient[api.WatchResponse]) { drain(stream) }); err != nil {
		return nil, fmt.Errorf("watch-idle: %w", err)
	}
	res.SetupSeconds = time.Since(began).Seconds()
	res.StreamsPerSecond = float64(cfg.streams) / res.SetupSeconds
	logger.Info("streams open, idling", "seconds", res.SetupSeconds, "settle", cfg.settle)
	if err := sleep(ctx, cfg.settle); err != nil {
		return nil, fmt.Errorf("watch-idle: settle: %w", err)
	}
	// A collection halves an idle goroutine's stack at most once, and a
	// server's periodic collections shrink them as far as they go: the
	// streams are measured after a few.
	for range idleCollections - 1 {
		if err := get(ctx, "http://"+c.metricsAddr+"/debug/pprof/heap?gc=1", nil); err != nil {
			return nil, fmt.Errorf("watch-idle: force server GC: %w", err)
		}
	}
	open, err := scrape(ctx, c.metricsAddr, true)
	if err != nil {
		return nil, fmt.Errorf("watch-idle: measure: %w", err)
	}
	res.fill(start, attached, open)
	if cfg.hold > 0 {
		logger.Info("holding streams open", "for", cfg.hold)
		if err := sleep(ctx, cfg.hold); err != nil {
			return nil, fmt.Errorf("watch-idle: hold: %w", err)
		}
	}
	return res, nil
}

// fill derives the memory figures from the three scrapes.
func (r *watchIdleResult) fill(start, attached, open metrics) {
	const (
		rss   = "process_resident_memory_bytes"
		heap  = "go_memstats_heap_inuse_bytes"
		stack = "go_memstats_stack_inuse_bytes"
		gor   = "go_goroutines"
	)
	n := float64(r.Streams)
	r.Subscriptions = open["yorkie_backend_subscriptions"]
	r.RSSStart, r.RSSAttached, r.RSSStreams = start[rss], attached[rss], open[rss]
	r.HeapStart, r.HeapAttached, r.HeapStreams = start[heap], attached[heap], open[heap]
	r.StackAttached, r.StackStreams = attached[stack], open[stack]
	r.GoroutinesIdle, r.Goroutines = attached[gor], open[gor]
	r.RSSPerStream = (open[rss] - attached[rss]) / n
	r.HeapPerStream = (open[heap] - attached[heap]) / n
	r.StackPerStream = (open[stack] - attached[stack]) / n
	r.GoroutinesPerStream = (open[gor] - attached[gor]) / n
	r.RSSPerClient = (attached[rss] - start[rss]) / n
	r.HeapPerClient = (attached[heap] - start[heap]) / n
}

func (r *watchIdleResult) rows() [][2]string {
	return [][2]string{
		{"transport", r.Transport},
		{"streams / docs", fmt.Sprintf("%d / %d", r.Streams, r.Docs)},
		{"subscriptions gauge", fmt.Sprintf("%.0f", r.Subscriptions)},
		{"stream setup", fmt.Sprintf("%.2fs (%.0f streams/s)", r.SetupSeconds, r.StreamsPerSecond)},
		{"server RSS start / attached / streams", fmt.Sprintf("%s / %s / %s", mib(r.RSSStart), mib(r.RSSAttached), mib(r.RSSStreams))},
		{"server heap in use start / attached / streams", fmt.Sprintf("%s / %s / %s", mib(r.HeapStart), mib(r.HeapAttached), mib(r.HeapStreams))},
		{"server stacks attached / streams", fmt.Sprintf("%s / %s", mib(r.StackAttached), mib(r.StackStreams))},
		{"server goroutines attached / streams", fmt.Sprintf("%.0f / %.0f", r.GoroutinesIdle, r.Goroutines)},
		{"RSS per stream", kib(r.RSSPerStream)},
		{"heap in use per stream", kib(r.HeapPerStream)},
		{"stack per stream", kib(r.StackPerStream)},
		{"goroutines per stream", fmt.Sprintf("%.2f", r.GoroutinesPerStream)},
		{"RSS / heap in use per client (activated, attached)", kib(r.RSSPerClient) + " / " + kib(r.HeapPerClient)},
	}
}

// drain reads a stream until it ends.
func drain(stream *connect.ServerStreamForClient[api.WatchResponse]) {
	for stream.Receive() {
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
