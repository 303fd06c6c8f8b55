// Package housekeeping deactivates clients that went away without saying
// so. A client that has not called the server for longer than a threshold
// is deactivated and detached from its documents, so it no longer holds
// their minimum synced version vector down (nor its metadata in memory).
//
// Every node records the calls it serves in a Tracker and writes them to the
// database once per interval, in one batch, so a PushPull costs no extra
// write. Every interval each node flushes its tracker; the node that holds
// the housekeeping role in the session store then lists a batch of inactive
// clients and deactivates them through the same path as a client's own
// DeactivateClient: each document is detached by its owner.
//
// Each client is judged by its own project's threshold. A run reads the
// thresholds the projects set once, lists the clients silent for longer
// than the shortest threshold in force, and deactivates those of them whose
// own project's threshold has passed too; the others are looked at again
// on later runs.
//
// One node at a time holds the role (it lives with that node's lease). A
// node that loses its lease in the middle of a run may finish the client in
// hand while another node starts; deactivating a client twice is harmless.
package housekeeping

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Defaults for zero Config fields, as upstream Yorkie has them.
const (
	DefaultInterval            = 30 * time.Second
	DefaultDeactivateThreshold = 24 * time.Hour
	DefaultCandidatesLimit     = 500
)

// RoleName is the session store role whose holder runs the scans.
const RoleName = "housekeeping"

// Clients is what housekeeping needs of the database.
type Clients interface {
	TouchClients(ctx context.Context, clientIDs []string, at time.Time) error
	FindInactiveClients(ctx context.Context, before time.Time, afterID string, limit int) ([]*database.ClientInfo, error)
	ClientDeactivateThresholds(ctx context.Context) (map[string]string, error)
}

// Role elects the node that scans. A cluster layer implements it with the
// session store.
type Role interface {
	// Lead claims the role and reports whether this node holds it.
	Lead(ctx context.Context, role string) (bool, error)
	// Resign gives the role up if this node holds it.
	Resign(ctx context.Context, role string) error
}

// Config configures a Housekeeper.
type Config struct {
	// Interval between runs (DefaultInterval when zero). Activity reaches
	// the database at most one interval late.
	Interval time.Duration
	// DeactivateThreshold is how long a client may stay silent
	// (DefaultDeactivateThreshold when zero) when its project sets no
	// threshold of its own (or an invalid one). A client is deactivated once
	// its recorded activity is older than its threshold plus one interval,
	// the most the record can lag.
	DeactivateThreshold time.Duration
	// CandidatesLimit bounds the clients one run examines, and so
	// deactivates (DefaultCandidatesLimit when zero); the next run goes on
	// from there.
	CandidatesLimit int
	// DB finds inactive clients, records activity and lists the projects'
	// thresholds, which are read again on every run, so an operator's change
	// applies without a restart. Required.
	DB Clients
	// Tracker collects this node's activity. Required: the RPC layer feeds
	// the same one.
	Tracker *Tracker
	// Deactivate deactivates one client, in its project, detaching each of
	// its documents at the document's owner. Required.
	Deactivate func(ctx context.Context, c *database.ClientInfo) error
	// Role elects the scanning node; nil scans on this node (a node with no
	// cluster).
	Role Role
	// Now is the clock (time.Now when nil); tests move it forward.
	Now func() time.Time
	// Logger (slog.Default() when nil).
	Logger *slog.Logger
	// Registerer receives the metrics; none when nil.
	Registerer prometheus.Registerer
	// OnRun, when set, is told the outcome of every run, after it ended.
	OnRun func(Report)
	// Compaction, when set, is run by the scanning node after the
	// deactivations of every run.
	Compaction *Compaction
}

// Report is the outcome of one run.
type Report struct {
	// Touched is how many clients' activity this node wrote.
	Touched int
	// Led reports whether this node held the role and scanned.
	Led bool
	// Candidates are the IDs of the clients found silent for longer than
	// their own project's threshold.
	Candidates []string
	// Spared counts the clients the scan found past the shortest threshold
	// but not past their own project's; later runs look at them again.
	Spared int
	// Deactivated counts the candidates deactivated.
	Deactivated int
	// Compacted counts the documents compacted.
	Compacted int
	// Err joins what failed; the run went on past single clients.
	Err error
}

// Housekeeper runs housekeeping on one node.
type Housekeeper struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	runMu  sync.Mutex // one run at a time; guards cursor and led
	cursor string     // the last client ID the previous run examined
	led    bool
	// docCursor is where the compaction task goes on (guarded by runMu).
	docCursor string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Housekeeper; Start runs it.
func New(cfg Config) (*Housekeeper, error) {
	if cfg.DB == nil || cfg.Tracker == nil || cfg.Deactivate == nil {
		return nil, errors.New("housekeeping: Config.DB, Tracker and Deactivate are required")
	}
	if cfg.Interval < 0 || cfg.DeactivateThreshold < 0 || cfg.CandidatesLimit < 0 {
		return nil, fmt.Errorf("housekeeping: negative interval %v, threshold %v or limit %d",
			cfg.Interval, cfg.DeactivateThreshold, cfg.CandidatesLimit)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.DeactivateThreshold == 0 {
		cfg.DeactivateThreshold = DefaultDeactivateThreshold
	}
	if cfg.CandidatesLimit == 0 {
		cfg.CandidatesLimit = DefaultCandidatesLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if c := cfg.Compaction; c != nil {
		if c.Documents == nil || c.Compact == nil || c.MinChanges < 0 {
			return nil, errors.New("housekeeping: Compaction needs Documents, Compact and a positive MinChanges")
		}
		if c.MinChanges == 0 {
			c.MinChanges = DefaultCompactionMinChanges
		}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Housekeeper{cfg: cfg, log: cfg.Logger.With("component", "housekeeping"), metrics: m}, nil
}

// Start runs housekeeping every interval in the background until Stop.
func (h *Housekeeper) Start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go h.loop(ctx, h.done)
}

func (h *Housekeeper) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(h.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if r := h.RunOnce(ctx); r.Err != nil && ctx.Err() == nil {
				h.log.Warn("housekeeping run failed", "led", r.Led, "deactivated", r.Deactivated, "error", r.Err)
			}
		}
	}
}

// Stop ends the background runs, waits for the one in progress, writes the
// activity collected since the last run, and gives the role up so another
// node scans at once. It is idempotent.
func (h *Housekeeper) Stop(ctx context.Context) error {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.cancel = nil
	h.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	h.runMu.Lock()
	defer h.runMu.Unlock()
	var errs []error
	if _, err := h.flush(ctx); err != nil {
		errs = append(errs, err)
	}
	if h.led && h.cfg.Role != nil {
		if err := h.cfg.Role.Resign(ctx, RoleName); err != nil {
			errs = append(errs, err)
		}
		h.led = false
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("housekeeping: stop: %w", err)
	}
	return nil
}

// Abandon ends the background runs as a crash would: nothing collected is
// written and the role is not given up (it ends with the node's lease).
func (h *Housekeeper) Abandon() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.cancel = nil
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// RunOnce runs housekeeping now: it writes this node's activity, then, if
// this node holds the role, deactivates a batch of inactive clients. The
// background loop calls it every interval; tests call it to run at a
// moment they choose.
func (h *Housekeeper) RunOnce(ctx context.Context) Report {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	r := h.run(ctx)
	h.metrics.observe(r)
	if h.cfg.OnRun != nil {
		h.cfg.OnRun(r)
	}
	return r
}

func (h *Housekeeper) run(ctx context.Context) Report {
	var r Report
	var errs []error
	touched, err := h.flush(ctx)
	r.Touched = touched
	if err != nil {
		errs = append(errs, err)
	}
	if h.cfg.Role != nil {
		led, err := h.cfg.Role.Lead(ctx, RoleName)
		if err != nil {
			errs = append(errs, fmt.Errorf("housekeeping: lead: %w", err))
		}
		h.led = led
		if !led {
			r.Err = errors.Join(errs...)
			return r
		}
	}
	r.Led = true
	// A failure to read the thresholds skips the scan rather than guessing:
	// the server's flag may be far shorter than a project's.
	thresholds, err := h.thresholds(ctx)
	if err != nil {
		errs = append(errs, err)
		r.Err = errors.Join(errs...)
		return r
	}
	now := h.cfg.Now()
	silentSince := func(threshold time.Duration) time.Time { return now.Add(-threshold - h.cfg.Interval) }
	shortest := h.cfg.DeactivateThreshold
	for _, d := range thresholds {
		shortest = min(shortest, d)
	}
	found, err := h.cfg.DB.FindInactiveClients(ctx, silentSince(shortest), h.cursor, h.cfg.CandidatesLimit)
	if err != nil {
		errs = append(errs, fmt.Errorf("housekeeping: find inactive clients: %w", err))
		r.Err = errors.Join(errs...)
		return r
	}
	// A short batch reached the end: the next run starts from the first ID
	// again, so clients that failed or were spared here are looked at again
	// then.
	if len(found) < h.cfg.CandidatesLimit {
		h.cursor = ""
	} else {
		h.cursor = found[len(found)-1].ID
	}
	for _, c := range found {
		threshold, ok := thresholds[c.ProjectID]
		if !ok {
			threshold = h.cfg.DeactivateThreshold
		}
		if !c.UpdatedAt.Before(silentSince(threshold)) {
			r.Spared++
			continue
		}
		r.Candidates = append(r.Candidates, c.ID)
		if err := h.cfg.Deactivate(ctx, c); err != nil {
			errs = append(errs, fmt.Errorf("housekeeping: deactivate %s: %w", c.ID, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		r.Deactivated++
		h.log.Info("deactivated inactive client", "client", c.ID, "last_activity", c.UpdatedAt)
	}
	errs = append(errs, h.compact(ctx, &r)...)
	r.Err = errors.Join(errs...)
	return r
}

// thresholds returns the valid thresholds the projects set, by project ID.
func (h *Housekeeper) thresholds(ctx context.Context) (map[string]time.Duration, error) {
	set, err := h.cfg.DB.ClientDeactivateThresholds(ctx)
	if err != nil {
		return nil, fmt.Errorf("housekeeping: client deactivate thresholds: %w", err)
	}
	out := make(map[string]time.Duration, len(set))
	for id, v := range set {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			// The admin API refuses such a value; one written otherwise
			// must not make housekeeping deactivate the project's clients
			// at once.
			h.log.Warn("project has an invalid client deactivate threshold; using the server's",
				"project", id, "threshold", v)
			continue
		}
		out[id] = d
	}
	return out, nil
}

// flush writes the activity collected since the last flush.
func (h *Housekeeper) flush(ctx context.Context) (int, error) {
	ids := h.cfg.Tracker.drain()
	if len(ids) == 0 {
		return 0, nil
	}
	if err := h.cfg.DB.TouchClients(ctx, ids, h.cfg.Now()); err != nil {
		h.cfg.Tracker.restore(ids)
		return 0, fmt.Errorf("housekeeping: record activity of %d clients: %w", len(ids), err)
	}
	return len(ids), nil
}

// metrics counts housekeeping work.
type metrics struct {
	runs        *prometheus.CounterVec
	deactivated prometheus.Counter
	failures    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "housekeeping", Name: "runs_total",
			Help: "Housekeeping runs, by whether this node held the role and scanned.",
		}, []string{"led"}),
		deactivated: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "housekeeping", Name: "clients_deactivated_total",
			Help: "Inactive clients deactivated by housekeeping.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "housekeeping", Name: "failures_total",
			Help: "Housekeeping runs that failed in part.",
		}),
	}
	if reg != nil {
		if err := errors.Join(reg.Register(m.runs), reg.Register(m.deactivated), reg.Register(m.failures)); err != nil {
			return nil, fmt.Errorf("housekeeping: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(r Report) {
	led := "false"
	if r.Led {
		led = "true"
	}
	m.runs.WithLabelValues(led).Inc()
	m.deactivated.Add(float64(r.Deactivated))
	if r.Err != nil {
		m.failures.Inc()
	}
}
