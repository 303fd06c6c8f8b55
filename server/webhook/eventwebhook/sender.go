// Package eventwebhook posts a project's document events to its event
// webhook, in upstream Yorkie's format and signature, debounced per
// document so that a burst of changes makes one call.
package eventwebhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/webhook"
)

// Defaults for zero Config fields.
const (
	// DefaultDebounce is upstream's debouncing time.
	DefaultDebounce   = time.Second
	DefaultMaxWait    = 5 * time.Second
	DefaultWorkers    = 4
	DefaultMaxPending = 10000
)

// Config configures a Sender. The per-project target comes with each change.
type Config struct {
	// HTTPClient posts the events. Required; webhook.NewHTTPClient builds
	// one that can refuse private addresses.
	HTTPClient *http.Client
	// Clock drives debouncing and retry waits (webhook.SystemClock when nil).
	Clock webhook.Clock
	// Debounce is the quiet time after a document's last change before its
	// event is sent (DefaultDebounce when zero).
	Debounce time.Duration
	// MaxWait bounds how long a change waits for its event while changes
	// keep coming (DefaultMaxWait when zero; never below Debounce).
	MaxWait time.Duration
	// Workers is how many events are delivered at once (DefaultWorkers when
	// zero); one slow webhook holds a worker for its retries.
	Workers int
	// MaxPending bounds the documents with an event scheduled or being
	// delivered (DefaultMaxPending when zero). Beyond it, changes of other
	// documents are dropped and counted rather than queued without bound.
	MaxPending int
	// Logger (slog.Default() when nil) logs failed deliveries.
	Logger *slog.Logger
	// Registerer receives the metrics; none when nil.
	Registerer prometheus.Registerer
	// OnDelivery, when set, is told of every delivery once it has ended.
	OnDelivery func(Delivery)
}

// Target is one project's event webhook.
type Target struct {
	// URL is the webhook, an absolute http or https URL.
	URL string
	// SigningKey is the project's secret key; "" sends no signature, as
	// upstream does.
	SigningKey string
	// Policy bounds each delivery's attempts.
	Policy webhook.Policy
}

// Delivery is the outcome of one event.
type Delivery struct {
	Project string
	DocKey  string
	// Body is what was sent (nil when nothing was).
	Body     []byte
	Status   int // the last HTTP status, 0 when none came
	Attempts int
	Err      error // nil when the webhook answered 2xx
}

type docID struct{ project, key string }

// pending is a document's scheduled event.
type pending struct {
	id     docID
	target Target
	first  time.Time // the first change not yet announced
	due    time.Time
}

type job struct {
	id     docID
	target Target
	issued time.Time
}

// Sender debounces and delivers events. It is safe for concurrent use.
type Sender struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu          sync.Mutex
	closed      bool
	pending     map[docID]*pending
	outstanding int // pending plus queued or being delivered, at most MaxPending
	work        chan job

	ctx    context.Context // ends the deliveries when Close gives up waiting
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Sender and starts its workers; Close stops them.
func New(cfg Config) (*Sender, error) {
	if cfg.HTTPClient == nil {
		return nil, errors.New("eventwebhook: HTTPClient is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = webhook.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	cfg.MaxWait = max(cfg.MaxWait, cfg.Debounce)
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: m,
		pending: make(map[docID]*pending),
		// Never full: at most MaxPending jobs exist at once.
		work:   make(chan job, cfg.MaxPending),
		ctx:    ctx,
		cancel: cancel,
	}
	for range cfg.Workers {
		s.wg.Go(s.deliverLoop)
	}
	return s, nil
}

// DocumentChanged reports a change of a document of project; its event goes
// to target once the document has been quiet for Debounce, or MaxWait after
// the first change not yet announced. It does not block.
func (s *Sender) DocumentChanged(project, docKey string, target Target) {
	id := docID{project, docKey}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.metrics.dropped.Inc()
		return
	}
	now := s.cfg.Clock.Now()
	if p, ok := s.pending[id]; ok {
		p.target = target
		p.due = earliest(now.Add(s.cfg.Debounce), p.first.Add(s.cfg.MaxWait))
		s.metrics.coalesced.Inc()
		return
	}
	if s.outstanding >= s.cfg.MaxPending {
		s.metrics.dropped.Inc()
		s.log.Warn("event webhook backlog full; change not announced",
			"project", project, "document", docKey, "max_pending", s.cfg.MaxPending)
		return
	}
	p := &pending{id: id, target: target, first: now, due: now.Add(s.cfg.Debounce)}
	s.pending[id] = p
	s.outstanding++
	s.metrics.scheduled.Inc()
	// One timer per burst: later changes only move the due time, and the
	// timer sets itself again if it fires early.
	s.cfg.Clock.AfterFunc(s.cfg.Debounce, func() { s.fire(p) })
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// fire queues p's event if it is due, or waits for its new due time.
func (s *Sender) fire(p *pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[p.id] != p { // flushed by Close
		return
	}
	now := s.cfg.Clock.Now()
	if now.Before(p.due) {
		s.cfg.Clock.AfterFunc(p.due.Sub(now), func() { s.fire(p) })
		return
	}
	delete(s.pending, p.id)
	s.work <- job{id: p.id, target: p.target, issued: now}
}

func (s *Sender) deliverLoop() {
	for j := range s.work {
		d := s.deliver(j)
		s.mu.Lock()
		s.outstanding--
		s.mu.Unlock()
		if s.cfg.OnDelivery != nil {
			s.cfg.OnDelivery(d)
		}
	}
}

// deliver posts one event, signed, with the target's retries.
func (s *Sender) deliver(j job) Delivery {
	d := Delivery{Project: j.id.project, DocKey: j.id.key}
	start := time.Now()
	body, err := encodeBody(DocumentRootChanged, j.id.key, j.issued)
	if err != nil {
		d.Err = fmt.Errorf("event webhook body: %w", err)
		s.finish(&d, "failed", start)
		return d
	}
	d.Body = body
	if err := j.target.Policy.Validate(); err != nil {
		d.Err = fmt.Errorf("event webhook of project %s: %w", j.id.project, err)
		s.finish(&d, "refused", start)
		return d
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if j.target.SigningKey != "" {
		header.Set(SignatureHeader, Sign(j.target.SigningKey, body))
	}
	ans, err := webhook.Post(s.ctx, s.cfg.HTTPClient, s.cfg.Clock, j.target.Policy, webhook.Request{
		URL: j.target.URL, Header: header, Body: body, MaxAnswer: 4 << 10,
	})
	d.Status, d.Attempts = ans.Status, ans.Attempts
	s.metrics.requests.Add(float64(ans.Attempts))
	outcome := "delivered"
	switch {
	case errors.Is(err, webhook.ErrAddressRefused), errors.Is(err, webhook.ErrInvalidURL):
		outcome, d.Err = "refused", err
	case s.ctx.Err() != nil:
		outcome, d.Err = "canceled", err
	case err != nil:
		outcome, d.Err = "failed", err
	case ans.Status < 200 || ans.Status > 299:
		outcome, d.Err = "failed", fmt.Errorf("event webhook answered status %d after %d attempts", ans.Status, ans.Attempts)
	}
	s.finish(&d, outcome, start)
	return d
}

func (s *Sender) finish(d *Delivery, outcome string, start time.Time) {
	s.metrics.deliveries.WithLabelValues(outcome).Inc()
	s.metrics.latency.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	if d.Err != nil {
		s.log.Warn("event webhook not delivered", "project", d.Project, "document", d.DocKey,
			"outcome", outcome, "error", d.Err)
	}
}

// Close stops taking changes, sends every scheduled event at once and waits
// for the deliveries. When ctx ends first, it cuts the deliveries still
// running, waits for the workers to return, and reports ctx's error.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		now := s.cfg.Clock.Now()
		for id, p := range s.pending {
			delete(s.pending, id)
			s.work <- job{id: p.id, target: p.target, issued: now}
		}
		close(s.work)
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		<-done
		return fmt.Errorf("event webhook close: %w", ctx.Err())
	}
}
