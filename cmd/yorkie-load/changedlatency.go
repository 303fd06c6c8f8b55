package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// changedConfig sizes a changed-latency run.
type changedConfig struct {
	watchers int // per document, besides the pushers
	pushers  int // per document
	docs     int
	pushes   int     // per pusher
	rate     float64 // pushes per second per pusher
	drain    time.Duration
}

// changedResult is what changed-latency measured.
type changedResult struct {
	Transport string `json:"transport"`
	Docs      int    `json:"docs"`
	Watchers  int    `json:"watchers_per_doc"` // besides the pushers
	Pushers   int    `json:"pushers_per_doc"`
	Pushes    int    `json:"pushes"`
	// Expected is the deliveries a run should see: each push counts once
	// for every other watcher of its document.
	Expected int `json:"expected_deliveries"`
	// Missing is Expected minus the deliveries measured: pushes no CHANGED
	// was matched to before the drain time ran out. Nonzero when the server
	// merged the events of pushes whose answers had not reached their
	// pushers yet (several pushers per document, or a rate close to the
	// delivery time): lower -rate or -p to measure every push.
	Missing int `json:"missing_deliveries"`
	// Events is the CHANGED events received; fewer than the deliveries
	// means the server merged queued ones.
	Events   int     `json:"changed_events"`
	Seconds  float64 `json:"push_seconds"`
	Latency  summary `json:"changed_latency"`
	PushPull summary `json:"pushpull_latency"`
	// PushHandlerP50MS and PushHandlerP99MS bound the server's own handling
	// time of the pushes (histogram bucket upper bounds).
	PushHandlerP50MS float64 `json:"server_pushpull_handler_p50_ms_at_most"`
	PushHandlerP99MS float64 `json:"server_pushpull_handler_p99_ms_at_most"`
	// ServerCPUPerDelivery is the server's CPU from the first push to the
	// end of the drain divided by the CHANGED events delivered (the pushes'
	// own cost included), in microseconds; ServerCores is the same CPU over
	// that time.
	ServerCPUPerDelivery float64 `json:"server_cpu_us_per_delivery"`
	ServerCores          float64 `json:"server_cores_busy"`
}

func changedLatencyFlags(fs *flag.FlagSet, cfg *changedConfig) {
	fs.IntVar(&cfg.watchers, "w", 10, "watchers per document besides the pushers (which watch too)")
	fs.IntVar(&cfg.pushers, "p", 1, "pushers per document")
	fs.IntVar(&cfg.docs, "docs", 1, "documents")
	fs.IntVar(&cfg.pushes, "n", 200, "pushes per pusher")
	fs.Float64Var(&cfg.rate, "rate", 20, "pushes per second per pusher")
	fs.DurationVar(&cfg.drain, "drain", 3*time.Second, "how long to wait for late CHANGED events after the last push")
}

// push is one measured push.
type push struct {
	by    int // index of the pushing session
	sent  time.Time
	acked time.Time // zero until the PushPull answer arrived
}

// docPushes is the ordered log of pushes to one document, which watchers
// match their CHANGED events against.
type docPushes struct {
	mu     sync.Mutex
	pushes []*push
}

// changedWatcher matches one watcher's CHANGED events to pushes.
type changedWatcher struct {
	self    int
	doc     *docPushes
	next    int // first push of doc not yet matched
	expect  int
	samples []time.Duration
	events  int
	full    chan struct{} // closed when expect samples are in
}

// onChanged matches a CHANGED event received at t. The server may merge
// CHANGED events that queue up, so one event covers the oldest unmatched
// push (which it must be caused by, or a later one) and every further push
// already acknowledged to its pusher before t, whose change was therefore
// stored before the watcher heard of it.
func (w *changedWatcher) onChanged(t time.Time) {
	w.events++
	w.doc.mu.Lock()
	defer w.doc.mu.Unlock()
	first := true
	for w.next < len(w.doc.pushes) {
		p := w.doc.pushes[w.next]
		if p.by == w.self {
			w.next++
			continue
		}
		if !first && (p.acked.IsZero() || p.acked.After(t)) {
			break
		}
		first = false
		w.samples = append(w.samples, t.Sub(p.sent))
		w.next++
		if len(w.samples) == w.expect {
			close(w.full)
		}
	}
}

func runChangedLatency(ctx context.Context, c common, cfg changedConfig, logger *slog.Logger) (*changedResult, error) {
	if cfg.watchers < 1 || cfg.pushers < 1 || cfg.docs < 1 || cfg.pushes < 1 || cfg.rate <= 0 {
		return nil, errors.New("changed-latency: want -w >= 1, -p >= 1, -docs >= 1, -n >= 1, -rate > 0")
	}
	perDoc := cfg.watchers + cfg.pushers
	n := perDoc * cfg.docs
	f, _, err := newFleet(c, n)
	if err != nil {
		return nil, fmt.Errorf("changed-latency: %w", err)
	}
	defer f.close()
	// Session i watches document i / perDoc; the first pushers of each
	// document also push.
	if err := f.attach(ctx, logger, n, cfg.docs, func(i int) int { return i / perDoc }); err != nil {
		return nil, fmt.Errorf("changed-latency: %w", err)
	}
	sessions := f.sessions
	docs := make([]*docPushes, cfg.docs)
	for d := range docs {
		docs[d] = &docPushes{}
	}
	watchers := make([]*changedWatcher, n)
	for i := range watchers {
		expect := cfg.pushers * cfg.pushes
		if i%perDoc < cfg.pushers {
			expect -= cfg.pushes
		}
		watchers[i] = &changedWatcher{self: i, doc: docs[i/perDoc], expect: expect, full: make(chan struct{})}
		if expect == 0 {
			close(watchers[i].full)
		}
	}

	err = f.watch(ctx, logger, func(i int, stream *connect.ServerStreamForClient[api.WatchResponse]) {
		w := watchers[i]
		for stream.Receive() {
			ev := stream.Msg().GetEvent().GetDocEvent().GetEvent()
			// CHANGED is the zero enum value: a missing event would read as one.
			if ev.GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED && ev.GetPublisher() != "" {
				w.onChanged(time.Now())
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("changed-latency: %w", err)
	}
	// Let the WATCHED events of the setup pass before timing anything.
	if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return nil, fmt.Errorf("changed-latency: settle: %w", err)
	}

	logger.Info("pushing", "pushers", cfg.pushers*cfg.docs, "pushes_each", cfg.pushes, "rate", cfg.rate)
	var (
		pushMu   sync.Mutex
		pushLats []time.Duration
		pushErr  error
		pushWG   sync.WaitGroup
	)
	before, err := scrape(ctx, c.metricsAddr, false)
	if err != nil {
		return nil, fmt.Errorf("changed-latency: %w", err)
	}
	interval := time.Duration(float64(time.Second) / cfg.rate)
	began := time.Now()
	for i := range sessions {
		if i%perDoc >= cfg.pushers {
			continue
		}
		// Spread all pushers evenly over the interval: pushes landing together
		// would measure a burst (and have their CHANGED events merged by the
		// server) rather than the steady rate asked for.
		nth := (i/perDoc)*cfg.pushers + i%perDoc
		offset := interval * time.Duration(nth) / time.Duration(cfg.pushers*cfg.docs)
		pushWG.Go(func() {
			if err := sleep(ctx, offset); err != nil {
				return
			}
			lats, err := pushAtRate(ctx, sessions[i], i, docs[i/perDoc], cfg.pushes, interval)
			pushMu.Lock()
			defer pushMu.Unlock()
			pushLats = append(pushLats, lats...)
			if err != nil && pushErr == nil {
				pushErr = err
			}
		})
	}
	pushWG.Wait()
	pushSeconds := time.Since(began).Seconds()
	if pushErr != nil {
		return nil, fmt.Errorf("changed-latency: %w", pushErr)
	}

	// Wait for the watchers to see every push, or for the drain time.
	deadline := time.NewTimer(cfg.drain)
	defer deadline.Stop()
wait:
	for _, w := range watchers {
		select {
		case <-w.full:
		case <-deadline.C:
			break wait
		case <-ctx.Done():
			return nil, fmt.Errorf("changed-latency: drain: %w", ctx.Err())
		}
	}
	// The server's CPU is read once every stream has ended.
	f.close()
	elapsed := time.Since(began).Seconds()
	after, err := scrape(ctx, c.metricsAddr, false)
	if err != nil {
		return nil, fmt.Errorf("changed-latency: %w", err)
	}

	res := &changedResult{
		Transport: string(f.tr), Docs: cfg.docs, Watchers: cfg.watchers, Pushers: cfg.pushers,
		Pushes: len(pushLats), Seconds: pushSeconds, PushPull: summarize(pushLats),
	}
	var all []time.Duration
	for _, w := range watchers {
		res.Expected += w.expect
		res.Events += w.events
		all = append(all, w.samples...)
	}
	res.Latency = summarize(all)
	res.Missing = res.Expected - res.Latency.Count
	res.PushHandlerP50MS = handlerQuantile(before, after, "PushPullChanges", 0.50)
	res.PushHandlerP99MS = handlerQuantile(before, after, "PushPullChanges", 0.99)
	cpu := after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
	res.ServerCores = cpu / elapsed
	if res.Events > 0 {
		res.ServerCPUPerDelivery = cpu / float64(res.Events) * 1e6
	}
	return res, nil
}

// pushAtRate pushes n changes, one per interval, logging each in doc before
// it is sent so a fast CHANGED cannot arrive before its push is known.
func pushAtRate(ctx context.Context, s *session, self int, doc *docPushes, n int, interval time.Duration) ([]time.Duration, error) {
	lats := make([]time.Duration, 0, n)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return lats, ctx.Err()
		}
		p := &push{by: self, sent: time.Now()}
		doc.mu.Lock()
		doc.pushes = append(doc.pushes, p)
		doc.mu.Unlock()
		if _, err := s.pushChange(ctx); err != nil {
			return lats, err
		}
		now := time.Now()
		doc.mu.Lock()
		p.acked = now
		doc.mu.Unlock()
		lats = append(lats, now.Sub(p.sent))
	}
	return lats, nil
}

func (r *changedResult) rows() [][2]string {
	return [][2]string{
		{"transport", r.Transport},
		{"docs x (watchers + pushers)", fmt.Sprintf("%d x (%d + %d)", r.Docs, r.Watchers, r.Pushers)},
		{"pushes", fmt.Sprintf("%d in %.1fs", r.Pushes, r.Seconds)},
		{"deliveries expected / missing", fmt.Sprintf("%d / %d", r.Expected, r.Missing)},
		{"CHANGED events received", fmt.Sprintf("%d", r.Events)},
		{"push -> CHANGED", r.Latency.String()},
		{"PushPull", r.PushPull.String()},
		{"server PushPull handler time", fmt.Sprintf("p50 <= %gms p99 <= %gms", r.PushHandlerP50MS, r.PushHandlerP99MS)},
		{"server CPU per CHANGED delivered", fmt.Sprintf("%.0f µs (%.2f cores busy)", r.ServerCPUPerDelivery, r.ServerCores)},
	}
}
