// Package authwebhook asks a project's auth webhook whether a call may go on,
// in upstream Yorkie's wire format: POST {"token", "method", "attributes"},
// answered by {"allowed", "reason"} with status 200, 403 or 401. Answers
// are cached; a webhook that cannot answer fails closed.
package authwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/webhook"
)

// Defaults for zero Config fields, upstream's where it has one.
const (
	DefaultCacheSize      = 5000
	DefaultAllowedTTL     = 10 * time.Second
	DefaultDeniedTTL      = 10 * time.Second
	DefaultMaxAnswerBytes = 64 << 10
	// DefaultMaxChecksPerProject bounds the checks of one project waiting on
	// its webhook at once: a webhook that never answers holds that many
	// calls, and every other call of the project fails closed at once.
	DefaultMaxChecksPerProject = 128
	// DefaultMaxChecks bounds the checks of all projects waiting on webhooks
	// at once on a node.
	DefaultMaxChecks = 1024
)

// Config configures a Client. The per-project settings come with each call.
type Config struct {
	// HTTPClient posts to the webhooks. Required; webhook.NewHTTPClient
	// builds one that can refuse private addresses.
	HTTPClient *http.Client
	// Clock drives cache expiry and retry waits (webhook.SystemClock when nil).
	Clock webhook.Clock
	// AllowedCacheSize and AllowedTTL bound the cache of allowed answers
	// (DefaultCacheSize, DefaultAllowedTTL when zero; a negative value turns
	// the cache off).
	AllowedCacheSize int
	AllowedTTL       time.Duration
	// DeniedCacheSize and DeniedTTL bound the cache of denied answers, kept
	// apart from the allowed ones. Unauthenticated answers are never cached:
	// the client asks again with a new token, and the same token may become
	// valid.
	DeniedCacheSize int
	DeniedTTL       time.Duration
	// MaxAnswerBytes bounds a webhook's answer (DefaultMaxAnswerBytes when
	// zero); a longer one is invalid.
	MaxAnswerBytes int64
	// MaxChecksPerProject and MaxChecks bound the checks waiting on webhook
	// calls at once, per project and per node (DefaultMaxChecksPerProject,
	// DefaultMaxChecks when zero). A check past either bound fails closed at
	// once, as a webhook that cannot be reached does, so a dead webhook costs
	// its own project's calls, never the goroutines and descriptors of every
	// project.
	MaxChecksPerProject int
	MaxChecks           int
	// Logger (slog.Default() when nil) logs webhooks that fail.
	Logger *slog.Logger
	// Registerer receives the metrics; none when nil.
	Registerer prometheus.Registerer
}

// Settings are one project's auth webhook settings.
type Settings struct {
	// URL is the webhook; "" turns the webhook off.
	URL string
	// Methods are the RPC names the webhook guards (upstream's names, such
	// as "AttachDocument" or "PushPull"); none guards nothing, as upstream.
	Methods []string
	// Policy bounds each check's attempts.
	Policy webhook.Policy
}

// Guards reports whether a call of method must ask the webhook. "Watch"
// also matches projects configured with upstream's older "WatchDocument"
// and "WatchChannel", and those match "Watch", as upstream does.
func (s Settings) Guards(method string) bool {
	if s.URL == "" || len(s.Methods) == 0 {
		return false
	}
	if slices.Contains(s.Methods, method) {
		return true
	}
	switch method {
	case "Watch":
		return slices.Contains(s.Methods, "WatchDocument") || slices.Contains(s.Methods, "WatchChannel")
	case "WatchDocument", "WatchChannel":
		return slices.Contains(s.Methods, "Watch")
	}
	return false
}

// Request is one question to the webhook.
type Request struct {
	// Project names the cache's namespace (the project's ID), so
	// two projects never share an answer.
	Project string
	// Token is the call's "authorization" header, as the client sent it.
	Token string
	// Method is the RPC name.
	Method string
	// Attributes are the documents the call touches; nil for calls on none.
	Attributes []Attribute
}

// Client checks calls against auth webhooks. It is safe for concurrent use.
type Client struct {
	http    *http.Client
	clock   webhook.Clock
	log     *slog.Logger
	allowed *lru
	denied  *lru
	maxBody int64
	metrics *metrics

	flightMu sync.Mutex
	flights  map[cacheKey]*flight
	onJoin   func() // tests learn that a check joined a call in flight

	slots slots
}

// slots counts the checks waiting on webhook calls, per project and in all.
type slots struct {
	mu         sync.Mutex
	perProject map[string]int
	total      int
	maxProject int
	max        int
}

// acquire takes a place for a check of project, or reports false when the
// project or the node has none left. release gives it back.
func (s *slots) acquire(project string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.max || s.perProject[project] >= s.maxProject {
		return nil, false
	}
	s.total++
	s.perProject[project]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.total--
		if s.perProject[project]--; s.perProject[project] == 0 {
			delete(s.perProject, project)
		}
	}, true
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.HTTPClient == nil {
		return nil, errors.New("authwebhook: HTTPClient is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = webhook.SystemClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxAnswerBytes <= 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Client{
		http:    cfg.HTTPClient,
		clock:   cfg.Clock,
		log:     cfg.Logger,
		allowed: newLRU(orDefault(cfg.AllowedCacheSize, DefaultCacheSize), orDefault(cfg.AllowedTTL, DefaultAllowedTTL)),
		denied:  newLRU(orDefault(cfg.DeniedCacheSize, DefaultCacheSize), orDefault(cfg.DeniedTTL, DefaultDeniedTTL)),
		maxBody: cfg.MaxAnswerBytes,
		metrics: m,
		flights: make(map[cacheKey]*flight),
		slots: slots{
			perProject: make(map[string]int),
			maxProject: orDefault(cfg.MaxChecksPerProject, DefaultMaxChecksPerProject),
			max:        orDefault(cfg.MaxChecks, DefaultMaxChecks),
		},
	}, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Check returns nil when the project's webhook allows the call or does not
// guard its method. Otherwise the error matches one of the package's
// sentinels (ConnectError maps it for the client), or is ctx's own error.
func (c *Client) Check(ctx context.Context, s Settings, r Request) error {
	if !s.Guards(r.Method) {
		return nil
	}
	key := newCacheKey(r.Project, s.URL, r)
	now := c.clock.Now()
	if e, ok := c.allowed.get(key, now); ok {
		c.metrics.hit.Inc()
		return verdictError(e.v, e.reason)
	}
	if e, ok := c.denied.get(key, now); ok {
		c.metrics.hit.Inc()
		return verdictError(e.v, e.reason)
	}
	release, ok := c.slots.acquire(r.Project)
	if !ok {
		c.metrics.busy.Inc()
		return &checkError{sentinel: ErrUnavailable, detail: "too many checks waiting on webhooks"}
	}
	defer release()
	body, err := json.Marshal(requestBody{Token: r.Token, Method: r.Method, Attributes: r.Attributes})
	if err != nil {
		return fmt.Errorf("auth webhook request: %w", err)
	}
	v, reason, err := c.share(ctx, key, s, r.Method, body)
	if err != nil {
		return err
	}
	return verdictError(v, reason)
}

// flight is one webhook call that concurrent identical checks wait for.
type flight struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int // checks waiting; the call is cancelled when the last leaves
	v       verdict
	reason  string
	err     error
}

// share makes one webhook call for all the concurrent checks of one
// question, so a burst of calls with a new token costs the webhook one
// request. The call runs apart from the context of the check that started
// it (its policy bounds it), for as long as any check waits for it: each
// waits only as long as its own context lasts, and when the last one has
// left, the call is cancelled.
func (c *Client) share(ctx context.Context, key cacheKey, s Settings, method string, body []byte) (verdict, string, error) {
	if err := ctx.Err(); err != nil {
		return invalid, "", fmt.Errorf("auth webhook: %w", err)
	}
	c.flightMu.Lock()
	f, joined := c.flights[key]
	if !joined {
		var fctx context.Context
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		c.flights[key] = f
		go c.fly(fctx, key, f, s, method, body)
	}
	f.waiters++
	c.flightMu.Unlock()
	if !joined {
		c.metrics.miss.Inc()
	} else {
		c.metrics.shared.Inc()
		if c.onJoin != nil {
			c.onJoin()
		}
	}
	select {
	case <-f.done:
		return f.v, f.reason, f.err
	case <-ctx.Done():
		c.flightMu.Lock()
		if f.waiters--; f.waiters == 0 {
			// Nobody waits: later checks start a call of their own.
			if c.flights[key] == f {
				delete(c.flights, key)
			}
			f.cancel()
		}
		c.flightMu.Unlock()
		return invalid, "", fmt.Errorf("auth webhook: %w", ctx.Err())
	}
}

// fly makes the call of f, caches a verdict, and releases f's waiters.
func (c *Client) fly(ctx context.Context, key cacheKey, f *flight, s Settings, method string, body []byte) {
	defer f.cancel()
	start := time.Now()
	f.v, f.reason, f.err = c.ask(ctx, s, body)
	c.metrics.observe(outcomeOf(f.v, f.err), time.Since(start))
	if f.err != nil && ctx.Err() == nil {
		c.log.WarnContext(ctx, "auth webhook failed", "url", s.URL, "method", method, "error", f.err)
	}
	now := c.clock.Now()
	switch {
	case f.err != nil:
	case f.v == allowed:
		c.denied.remove(key)
		c.allowed.put(key, f.v, f.reason, now)
	case f.v == denied:
		c.allowed.remove(key)
		c.denied.put(key, f.v, f.reason, now)
	}
	c.flightMu.Lock()
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	c.flightMu.Unlock()
	close(f.done)
}

// ask posts body and reads the answer; err is set for every outcome that is
// not a verdict of the webhook's.
func (c *Client) ask(ctx context.Context, s Settings, body []byte) (verdict, string, error) {
	if err := s.Policy.Validate(); err != nil {
		return invalid, "", &checkError{sentinel: ErrMisconfigured, detail: err.Error()}
	}
	ans, err := webhook.Post(ctx, c.http, c.clock, s.Policy, webhook.Request{
		URL:       s.URL,
		Header:    http.Header{"Content-Type": {"application/json"}},
		Body:      body,
		MaxAnswer: c.maxBody,
		// A closed port and a silent one fail alike: the webhook's outcome
		// must not tell a project's owner what listens at an address.
		FailAlike: true,
	})
	c.metrics.attempts.Add(float64(ans.Attempts))
	switch {
	case errors.Is(err, webhook.ErrAddressRefused), errors.Is(err, webhook.ErrInvalidURL):
		return invalid, "", &checkError{sentinel: ErrMisconfigured, detail: err.Error()}
	case err != nil:
		return invalid, "", &checkError{sentinel: ErrUnavailable, detail: err.Error()}
	case webhook.Retryable(ans.Status):
		return invalid, "", &checkError{sentinel: ErrUnavailable,
			detail: fmt.Sprintf("status %d after %d attempts", ans.Status, ans.Attempts)}
	case ans.Truncated:
		return invalid, "", &checkError{sentinel: ErrInvalidAnswer,
			detail: fmt.Sprintf("status %d, answer longer than %d bytes", ans.Status, c.maxBody)}
	}
	v, reason, derr := decodeAnswer(ans.Status, ans.Body)
	if derr != nil {
		return invalid, "", &checkError{sentinel: ErrInvalidAnswer, detail: derr.Error()}
	}
	return v, reason, nil
}

// verdictError is nil for allowed and the matching sentinel otherwise.
func verdictError(v verdict, reason string) error {
	switch v {
	case allowed:
		return nil
	case denied:
		return &checkError{sentinel: ErrPermissionDenied, reason: reason}
	case unauthenticated:
		return &checkError{sentinel: ErrUnauthenticated, reason: reason}
	}
	return &checkError{sentinel: ErrInvalidAnswer, reason: reason}
}

func outcomeOf(v verdict, err error) string {
	switch {
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrMisconfigured):
		return "misconfigured"
	case err != nil:
		return "invalid"
	case v == allowed:
		return "allowed"
	case v == denied:
		return "denied"
	}
	return "unauthenticated"
}
