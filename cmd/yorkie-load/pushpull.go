package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// pushPullConfig sizes a pushpull run.
type pushPullConfig struct {
	clients  int
	docs     int
	duration time.Duration
	ops      int // per client; 0 means until duration
}

// pushPullResult is what pushpull measured.
type pushPullResult struct {
	Transport string  `json:"transport"`
	Clients   int     `json:"clients"`
	Docs      int     `json:"docs"`
	Ops       int     `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_second"`
	Latency   summary `json:"latency"`
	// HandlerP50MS and HandlerP99MS bound the server's own handling time
	// (histogram bucket upper bounds); see handlerQuantile.
	HandlerP50MS float64 `json:"server_handler_p50_ms_at_most"`
	HandlerP99MS float64 `json:"server_handler_p99_ms_at_most"`
	// ServerCPUSeconds is the server's process_cpu_seconds_total growth over
	// the loop, so the load generator's own CPU is left out.
	// PulledPerOp is the mean number of other clients' changes each answer
	// carried: with C clients on a document about C-1, so the work of one
	// PushPull grows with the clients sharing its document.
	PulledPerOp      float64 `json:"pulled_changes_per_op"`
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	ServerCPUPerOp   float64 `json:"server_cpu_us_per_op"`
	ServerCores      float64 `json:"server_cores_busy"`
	// ClientCores is this load generator's CPU over the loop: near the
	// machine's free cores, the clients rather than the server set the pace.
	ClientCores float64 `json:"client_cores_busy"`
}

func pushPullFlags(fs *flag.FlagSet, cfg *pushPullConfig) {
	fs.IntVar(&cfg.clients, "clients", 10, "clients pushing in a closed loop")
	fs.IntVar(&cfg.docs, "docs", 1, "documents the clients are spread over")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of the loop")
	fs.IntVar(&cfg.ops, "n", 0, "PushPulls per client at most (0: until -duration)")
}

func runPushPull(ctx context.Context, c common, cfg pushPullConfig, logger *slog.Logger) (*pushPullResult, error) {
	if cfg.clients < 1 || cfg.docs < 1 || cfg.duration <= 0 || cfg.ops < 0 {
		return nil, errors.New("pushpull: want -clients >= 1, -docs >= 1, -duration > 0, -n >= 0")
	}
	f, _, err := newFleet(c, 0)
	if err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	defer f.close()
	if err := f.attach(ctx, logger, cfg.clients, cfg.docs, func(i int) int { return i % cfg.docs }); err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	sessions := f.sessions
	before, err := scrape(ctx, c.metricsAddr, false)
	if err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	logger.Info("pushing in a closed loop", "clients", cfg.clients, "duration", cfg.duration, "max_ops_each", cfg.ops)
	loopCtx, stop := context.WithTimeout(ctx, cfg.duration)
	defer stop()
	var (
		mu       sync.Mutex
		lats     []time.Duration
		pulled   int
		firstErr error
		wg       sync.WaitGroup
	)
	clientCPU, err := cpuTime()
	if err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	began := time.Now()
	for _, s := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			var got int
			var err error
			for cfg.ops == 0 || len(mine) < cfg.ops {
				t := time.Now()
				var n int
				if n, err = s.pushChange(loopCtx); err != nil {
					break
				}
				mine = append(mine, time.Since(t))
				got += n
			}
			// The loop's own deadline ending a call is how it stops.
			if loopCtx.Err() != nil && ctx.Err() == nil {
				err = nil
			}
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, mine...)
			pulled += got
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began).Seconds()
	clientCPUEnd, err := cpuTime()
	if err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	if firstErr != nil {
		return nil, fmt.Errorf("pushpull: %w", firstErr)
	}
	after, err := scrape(ctx, c.metricsAddr, false)
	if err != nil {
		return nil, fmt.Errorf("pushpull: %w", err)
	}
	res := &pushPullResult{
		Transport: string(f.tr), Clients: cfg.clients, Docs: cfg.docs,
		Ops: len(lats), Seconds: elapsed, Latency: summarize(lats),
	}
	res.OpsPerSec = float64(res.Ops) / elapsed
	res.HandlerP50MS = handlerQuantile(before, after, "PushPullChanges", 0.50)
	res.HandlerP99MS = handlerQuantile(before, after, "PushPullChanges", 0.99)
	res.ServerCPUSeconds = after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
	res.ServerCores = res.ServerCPUSeconds / elapsed
	res.ClientCores = (clientCPUEnd - clientCPU).Seconds() / elapsed
	if res.Ops > 0 {
		res.PulledPerOp = float64(pulled) / float64(res.Ops)
		res.ServerCPUPerOp = res.ServerCPUSeconds / float64(res.Ops) * 1e6
	}
	return res, nil
}

func (r *pushPullResult) rows() [][2]string {
	return [][2]string{
		{"transport", r.Transport},
		{"clients / docs", fmt.Sprintf("%d / %d", r.Clients, r.Docs)},
		{"ops", fmt.Sprintf("%d in %.1fs", r.Ops, r.Seconds)},
		{"throughput", fmt.Sprintf("%.0f ops/s", r.OpsPerSec)},
		{"latency", r.Latency.String()},
		{"server handler time", fmt.Sprintf("p50 <= %gms p99 <= %gms", r.HandlerP50MS, r.HandlerP99MS)},
		{"changes pulled per op", fmt.Sprintf("%.1f", r.PulledPerOp)},
		{"server CPU", fmt.Sprintf("%.2fs (%.2f cores busy)", r.ServerCPUSeconds, r.ServerCores)},
		{"server CPU per op", fmt.Sprintf("%.0f µs", r.ServerCPUPerOp)},
		{"load generator CPU", fmt.Sprintf("%.2f cores busy", r.ClientCores)},
	}
}
