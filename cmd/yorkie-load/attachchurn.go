package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// attachChurnConfig sizes an attach-churn run.
type attachChurnConfig struct {
	clients  int
	duration time.Duration
	window   time.Duration
	cycles   int // per client; 0 means until duration
}

// attachChurnWindow is one window of an attach-churn run: the cycles
// completed in it and the server CPU it took.
type attachChurnWindow struct {
	EndSeconds       float64 `json:"end_seconds"`
	Cycles           int64   `json:"cycles"`
	CyclesPerSec     float64 `json:"cycles_per_second"`
	ServerCPUPerOpUS float64 `json:"server_cpu_us_per_cycle"`
	// Documents is how many documents the run had attached by the window's
	// end (each cycle attaches a fresh one).
	Documents int64 `json:"documents"`
}

// attachChurnResult is what attach-churn measured.
type attachChurnResult struct {
	Transport string              `json:"transport"`
	Clients   int                 `json:"clients"`
	Cycles    int64               `json:"cycles"`
	Seconds   float64             `json:"seconds"`
	Latency   summary             `json:"cycle_latency"`
	Windows   []attachChurnWindow `json:"windows"`
	// FirstLastRatio is the last window's cycles/s over the first's: near 1
	// when an attach costs the same however many documents the clients
	// attached before.
	FirstLastRatio float64 `json:"last_over_first_rate"`
}

func attachChurnFlags(fs *flag.FlagSet, cfg *attachChurnConfig) {
	fs.IntVar(&cfg.clients, "clients", 16, "long-lived clients, each attaching and detaching fresh documents in a closed loop")
	fs.DurationVar(&cfg.duration, "duration", 60*time.Second, "length of the loop")
	fs.DurationVar(&cfg.window, "window", 5*time.Second, "length of each reported window")
	fs.IntVar(&cfg.cycles, "n", 0, "attach and detach cycles per client at most (0: until -duration)")
}

// runAttachChurn plays long-lived clients that each attach a fresh document
// (with the SDK's presence change), then detach it (with the presence
// CLEAR), over and over: the way an application that opens many documents
// over a session uses one client. Each window reports the cycles done and
// the server's CPU per cycle, so a cost that grows with what the clients
// attached before shows as a falling rate.
func runAttachChurn(ctx context.Context, c common, cfg attachChurnConfig, logger *slog.Logger) (*attachChurnResult, error) {
	if cfg.clients < 1 || cfg.duration <= 0 || cfg.window <= 0 || cfg.cycles < 0 {
		return nil, errors.New("attach-churn: want -clients >= 1, -duration > 0, -window > 0, -n >= 0")
	}
	f, _, err := newFleet(c, 0)
	if err != nil {
		return nil, fmt.Errorf("attach-churn: %w", err)
	}
	defer f.close()
	tag := runID()
	sessions := make([]*session, cfg.clients)
	if err := parallel(ctx, cfg.clients, f.conc, func(ctx context.Context, i int) error {
		s, err := activate(ctx, f.client, fmt.Sprintf("churn-%s-client-%d", tag, i))
		sessions[i] = s
		return err
	}); err != nil {
		return nil, fmt.Errorf("attach-churn: %w", err)
	}
	logger.Info("attaching and detaching in a closed loop", "clients", cfg.clients, "duration", cfg.duration)
	loopCtx, stop := context.WithTimeout(ctx, cfg.duration)
	defer stop()
	var (
		done     atomic.Int64
		mu       sync.Mutex
		lats     []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	began := time.Now()
	for i, s := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			var err error
			for n := 0; cfg.cycles == 0 || n < cfg.cycles; n++ {
				t := time.Now()
				if err = s.attach(loopCtx, fmt.Sprintf("churn-%s-doc-%d-%d", tag, i, n)); err != nil {
					break
				}
				if err = s.detach(loopCtx); err != nil {
					break
				}
				mine = append(mine, time.Since(t))
				done.Add(1)
			}
			if loopCtx.Err() != nil && ctx.Err() == nil {
				err = nil
			}
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	res := &attachChurnResult{Transport: string(f.tr), Clients: cfg.clients}
	prev, err := scrape(ctx, c.metricsAddr, false)
	if err != nil {
		stop()
		<-finished
		return nil, fmt.Errorf("attach-churn: %w", err)
	}
	prevAt, prevDone := began, int64(0)
	ticker := time.NewTicker(cfg.window)
	defer ticker.Stop()
	for running := true; running; {
		select {
		case <-ticker.C:
		case <-finished:
			running = false
		}
		now, n := time.Now(), done.Load()
		m, err := scrape(ctx, c.metricsAddr, false)
		if err != nil {
			stop()
			<-finished
			return nil, fmt.Errorf("attach-churn: %w", err)
		}
		w := attachChurnWindow{EndSeconds: now.Sub(began).Seconds(), Cycles: n - prevDone, Documents: n}
		if secs := now.Sub(prevAt).Seconds(); secs > 0 {
			w.CyclesPerSec = float64(w.Cycles) / secs
		}
		if w.Cycles > 0 {
			w.ServerCPUPerOpUS = (m["process_cpu_seconds_total"] - prev["process_cpu_seconds_total"]) / float64(w.Cycles) * 1e6
		}
		// A last sliver shorter than half a window says little: fold it out.
		if running || now.Sub(prevAt) >= cfg.window/2 || len(res.Windows) == 0 {
			res.Windows = append(res.Windows, w)
		}
		prev, prevAt, prevDone = m, now, n
	}
	res.Seconds = time.Since(began).Seconds()
	if firstErr != nil {
		return nil, fmt.Errorf("attach-churn: %w", firstErr)
	}
	res.Cycles = done.Load()
	res.Latency = summarize(lats)
	if len(res.Windows) > 1 && res.Windows[0].CyclesPerSec > 0 {
		res.FirstLastRatio = res.Windows[len(res.Windows)-1].CyclesPerSec / res.Windows[0].CyclesPerSec
	}
	return res, nil
}

// detach detaches the session's document with the SDK's presence CLEAR.
func (s *session) detach(ctx context.Context) error {
	s.NewClear()
	resp, err := s.c.DetachDocument(ctx, connect.NewRequest(&api.DetachDocumentRequest{
		ClientId:   s.ID,
		DocumentId: s.docID,
		ChangePack: s.pack(),
	}))
	if err != nil {
		return fmt.Errorf("detach %s from %s: %w", s.ID, s.DocKey, err)
	}
	if _, err := s.absorb(resp.Msg.GetChangePack()); err != nil {
		return fmt.Errorf("detach %s from %s: %w", s.ID, s.DocKey, err)
	}
	return nil
}

func (r *attachChurnResult) rows() [][2]string {
	rows := [][2]string{
		{"transport", r.Transport},
		{"clients", fmt.Sprint(r.Clients)},
		{"cycles", fmt.Sprintf("%d in %.1fs (one fresh document each)", r.Cycles, r.Seconds)},
		{"cycle latency", r.Latency.String()},
		{"last / first window rate", fmt.Sprintf("%.2f", r.FirstLastRatio)},
	}
	var b strings.Builder
	for _, w := range r.Windows {
		b.Reset()
		fmt.Fprintf(&b, "%.0f cycles/s, %.0f µs server CPU per cycle, %d documents so far", w.CyclesPerSec, w.ServerCPUPerOpUS, w.Documents)
		rows = append(rows, [2]string{fmt.Sprintf("window to %.0fs", w.EndSeconds), b.String()})
	}
	return rows
}
