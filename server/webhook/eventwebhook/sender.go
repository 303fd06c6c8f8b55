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
	DefaultWorkers    = 16
	DefaultMaxPending = 10000
	// DefaultWorkersPerProject bounds the deliveries of one project at once,
	// so a project whose webhook is slow or dead holds that many workers and
	// the others serve every other project.
	DefaultWorkersPerProject = 2
	// DefaultMaxPendingPerProject bounds one project's backlog, so a project
	// that changes many documents cannot fill the node's.
	DefaultMaxPendingPerProject = 1000
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
	// WorkersPerProject bounds the events of one project delivered at once
	// (DefaultWorkersPerProject when zero). Projects take turns for the
	// workers, so a slow or dead webhook delays its own project's events.
	WorkersPerProject int
	// MaxPending bounds the documents with an event scheduled or being
	// delivered (DefaultMaxPending when zero). Beyond it, changes of other
	// documents are dropped and counted rather than queued without bound.
	MaxPending int
	// MaxPendingPerProject bounds the same per project
	// (DefaultMaxPendingPerProject when zero).
	MaxPendingPerProject int
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

// queue is one project's events: waiting for a worker, being delivered, and
// its whole backlog (scheduled ones included).
type queue struct {
	jobs        []job
	running     int
	outstanding int
	ready       bool // in Sender.ready
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
	queues      map[string]*queue
	// ready lists, in turn, the projects with a job waiting and a worker
	// to spare; workers wait on wake for one.
	ready []string
	wake  *sync.Cond

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
	if cfg.WorkersPerProject <= 0 {
		cfg.WorkersPerProject = DefaultWorkersPerProject
	}
	if cfg.MaxPendingPerProject <= 0 {
		cfg.MaxPendingPerProject = DefaultMaxPendingPerProject
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
		queues:  make(map[string]*queue),
		ctx:     ctx,
		cancel:  cancel,
	}
	s.wake = sync.NewCond(&s.mu)
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
	q := s.queues[project]
	if q == nil {
		q = &queue{}
		s.queues[project] = q
	}
	if s.outstanding >= s.cfg.MaxPending || q.outstanding >= s.cfg.MaxPendingPerProject {
		s.metrics.dropped.Inc()
		s.metrics.droppedBy.WithLabelValues(project).Inc()
		s.log.Warn("event webhook backlog full; change not announced",
			"project", project, "document", docKey, "project_backlog", q.outstanding, "backlog", s.outstanding)
		s.forget(project, q)
		return
	}
	p := &pending{id: id, target: target, first: now, due: now.Add(s.cfg.Debounce)}
	s.pending[id] = p
	s.outstanding++
	q.outstanding++
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
	s.enqueue(job{id: p.id, target: p.target, issued: now})
}

// enqueue puts j in its project's queue, making the project ready if it
// has a worker to spare. The caller holds mu.
func (s *Sender) enqueue(j job) {
	q := s.queues[j.id.project]
	q.jobs = append(q.jobs, j)
	s.makeReady(j.id.project, q)
}

// makeReady lists the project among the ready ones if it has a job waiting
// and may take another worker, and wakes a worker. The caller holds mu.
func (s *Sender) makeReady(project string, q *queue) {
	if q.ready || len(q.jobs) == 0 || q.running >= s.cfg.WorkersPerProject {
		return
	}
	q.ready = true
	s.ready = append(s.ready, project)
	s.wake.Signal()
}

// forget drops the queue of a project with nothing left. The caller holds mu.
func (s *Sender) forget(project string, q *queue) {
	if q.outstanding == 0 && q.running == 0 && len(q.jobs) == 0 {
		delete(s.queues, project)
	}
}

// next waits for a job and takes it, from the project whose turn it is;
// ok is false once the sender is closed and every job is taken.
func (s *Sender) next() (j job, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.ready) == 0 {
		if s.closed && s.outstanding == 0 {
			return job{}, false
		}
		s.wake.Wait()
	}
	project := s.ready[0]
	s.ready = s.ready[1:]
	q := s.queues[project]
	q.ready = false
	j, q.jobs = q.jobs[0], q.jobs[1:]
	q.running++
	// Back to the end of the line: other projects go first.
	s.makeReady(project, q)
	return j, true
}

// done ends a delivery of project. The caller does not hold mu.
func (s *Sender) done(project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[project]
	q.running--
	q.outstanding--
	s.outstanding--
	s.makeReady(project, q)
	s.forget(project, q)
	if s.closed && s.outstanding == 0 {
		s.wake.Broadcast()
	}
}

func (s *Sender) deliverLoop() {
	for {
		j, ok := s.next()
		if !ok {
			return
		}
		d := s.deliver(j)
		s.done(j.id.project)
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
			s.enqueue(job{id: p.id, target: p.target, issued: now})
		}
		s.wake.Broadcast()
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
