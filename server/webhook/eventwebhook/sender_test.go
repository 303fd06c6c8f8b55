package eventwebhook

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/webhooktest"
)

const secret = "project-secret-key"

// receiver is an event webhook service on a real TCP port that checks each
// event's signature the way a user's service would.
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	events   []Body
	bad      []string // what failed the receiver's own checks
	statuses func(n int) int
	got      chan Body
}

func newReceiver(t testing.TB, statuses func(n int) int) *receiver {
	r := &receiver{statuses: statuses, got: make(chan Body, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var b Body
		r.mu.Lock()
		if !hmac.Equal([]byte(req.Header.Get(SignatureHeader)), []byte(Sign(secret, raw))) {
			r.bad = append(r.bad, "signature "+req.Header.Get(SignatureHeader))
		}
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			r.bad = append(r.bad, req.Method+" "+req.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			r.bad = append(r.bad, "body "+string(raw))
		}
		r.events = append(r.events, b)
		n := len(r.events)
		r.mu.Unlock()
		status := http.StatusOK
		if r.statuses != nil {
			status = r.statuses(n)
		}
		w.WriteHeader(status)
		if status == http.StatusOK {
			r.got <- b
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() ([]Body, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Body(nil), r.events...), append([]string(nil), r.bad...)
}

func (r *receiver) await(t *testing.T) Body {
	t.Helper()
	select {
	case b := <-r.got:
		return b
	case <-time.After(30 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("no event received")
		return Body{}
	}
}

var quick = webhook.Policy{Timeout: 5 * time.Second, MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

func target(url string) Target { return Target{URL: url, SigningKey: secret, Policy: quick} }

func newSender(t testing.TB, mod func(*Config)) *Sender {
	cfg := Config{
		HTTPClient: webhook.NewHTTPClient(webhook.HTTPClientConfig{}),
		Debounce:   time.Second,
		MaxWait:    3 * time.Second,
		Registerer: prometheus.NewRegistry(),
		Logger:     quiet,
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)

func TestBurstOfChangesSendsOneSignedEvent(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock = clk })
	for range 100 {
		s.DocumentChanged("project-1", "doc-1", target(r.srv.URL))
	}
	if n := clk.Pending(); n != 1 {
		t.Fatalf("timers for the burst = %d, want 1", n)
	}
	clk.Advance(time.Second)
	b := r.await(t)
	want := Body{Type: "DocumentRootChanged", Attributes: Attributes{Key: "doc-1", IssuedAt: "2026-03-04T05:06:08.891Z"}}
	if b != want {
		t.Fatalf("event = %+v, want %+v", b, want)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, bad := r.received()
	if len(events) != 1 || len(bad) != 0 {
		t.Fatalf("received %d events, failed checks %v; want 1 event, none failed", len(events), bad)
	}
	if got := testutil.ToFloat64(s.metrics.changes.WithLabelValues("coalesced")); got != 99 {
		t.Fatalf("coalesced changes = %v, want 99", got)
	}
	if got := testutil.ToFloat64(s.metrics.deliveries.WithLabelValues("delivered")); got != 1 {
		t.Fatalf("delivered = %v, want 1", got)
	}
}

func TestBodyIsUpstreamsFormat(t *testing.T) {
	body, err := encodeBody(DocumentRootChanged, "doc-1", t0.In(time.FixedZone("x", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"DocumentRootChanged","attributes":{"key":"doc-1","issuedAt":"2026-03-04T05:06:07.891Z"}}`
	if string(body) != want {
		t.Fatalf("body %s, want %s", body, want)
	}
}

func TestSignIsHexHMACSHA256(t *testing.T) {
	// The HMAC-SHA256 test vector of RFC 4231's and Wikipedia's example.
	got := Sign("key", []byte("The quick brown fox jumps over the lazy dog"))
	if want := "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestMaxWaitBoundsAStreamOfChanges(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock = clk })
	// A change every half second never leaves the document quiet for the
	// one-second debounce; the event still goes out three seconds after the
	// first change.
	for range 6 {
		s.DocumentChanged("p", "busy", target(r.srv.URL))
		clk.Advance(500 * time.Millisecond)
	}
	b := r.await(t)
	if want := t0.Add(3 * time.Second).Format(TimeFormat); b.Attributes.IssuedAt != want {
		t.Fatalf("issuedAt = %s, want %s", b.Attributes.IssuedAt, want)
	}
	s.DocumentChanged("p", "busy", target(r.srv.URL)) // opens the next burst
	clk.Advance(time.Second)
	if b := r.await(t); b.Attributes.IssuedAt != t0.Add(4*time.Second).Format(TimeFormat) {
		t.Fatalf("second event issued at %s", b.Attributes.IssuedAt)
	}
}

func TestDocumentsAndProjectsAreDebouncedApart(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock = clk })
	for range 10 {
		s.DocumentChanged("p1", "a", target(r.srv.URL))
		s.DocumentChanged("p1", "b", target(r.srv.URL))
		s.DocumentChanged("p2", "a", target(r.srv.URL))
	}
	clk.Advance(time.Second)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, bad := r.received()
	if len(events) != 3 || len(bad) != 0 {
		t.Fatalf("events %v, failed checks %v; want 3 events", events, bad)
	}
}

// deliveries collects OnDelivery reports.
func deliveries() (func(Delivery), <-chan Delivery) {
	ch := make(chan Delivery, 100)
	return func(d Delivery) { ch <- d }, ch
}

func awaitDelivery(t *testing.T, ch <-chan Delivery) Delivery {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(30 * time.Second): // a hang guard, not a synchronisation
		t.Fatal("no delivery reported")
		return Delivery{}
	}
}

func TestRetriesOn5xxThenDelivers(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		switch n {
		case 1:
			return http.StatusInternalServerError
		case 2:
			return http.StatusBadGateway
		case 3:
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	on, ch := deliveries()
	s := newSender(t, func(c *Config) { c.Debounce, c.OnDelivery = time.Millisecond, on })
	s.DocumentChanged("p", "doc", target(r.srv.URL))
	d := awaitDelivery(t, ch)
	if d.Err != nil || d.Attempts != 4 || d.Status != http.StatusOK {
		t.Fatalf("delivery = %+v, want 4 attempts ending in 200", d)
	}
	events, bad := r.received()
	if len(events) != 4 || len(bad) != 0 {
		t.Fatalf("received %d, failed checks %v", len(events), bad)
	}
	for _, e := range events[1:] {
		if e != events[0] {
			t.Fatalf("a retry sent another body: %+v vs %+v", e, events[0])
		}
	}
}

func TestGivesUpAfterTheRetriesAndOn4xx(t *testing.T) {
	for _, tc := range []struct {
		status, attempts int
	}{
		{http.StatusServiceUnavailable, quick.MaxRetries + 1},
		{http.StatusBadRequest, 1},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			r := newReceiver(t, func(int) int { return tc.status })
			on, ch := deliveries()
			s := newSender(t, func(c *Config) { c.Debounce, c.OnDelivery = time.Millisecond, on })
			s.DocumentChanged("p", "doc", target(r.srv.URL))
			d := awaitDelivery(t, ch)
			if d.Err == nil || d.Attempts != tc.attempts || d.Status != tc.status {
				t.Fatalf("delivery = %+v, want failure after %d attempts", d, tc.attempts)
			}
			if got := testutil.ToFloat64(s.metrics.deliveries.WithLabelValues("failed")); got != 1 {
				t.Fatalf("failed deliveries = %v", got)
			}
		})
	}
}

func TestDownWebhookIsRetriedThenGivenUp(t *testing.T) {
	r := newReceiver(t, nil)
	url := r.srv.URL
	r.srv.Close()
	on, ch := deliveries()
	s := newSender(t, func(c *Config) { c.Debounce, c.OnDelivery = time.Millisecond, on })
	s.DocumentChanged("p", "doc", target(url))
	d := awaitDelivery(t, ch)
	if !errors.Is(d.Err, webhook.ErrUnreachable) || d.Attempts != quick.MaxRetries+1 {
		t.Fatalf("delivery = %+v, want unreachable after %d attempts", d, quick.MaxRetries+1)
	}
}

func TestLoopbackRefusedWhenPrivateAddressesAreRefused(t *testing.T) {
	r := newReceiver(t, nil)
	on, ch := deliveries()
	s := newSender(t, func(c *Config) {
		c.HTTPClient = webhook.NewHTTPClient(webhook.HTTPClientConfig{RefusePrivate: true})
		c.OnDelivery = on
	})
	s.DocumentChanged("p", "doc", target(r.srv.URL))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := awaitDelivery(t, ch)
	if !errors.Is(d.Err, webhook.ErrAddressRefused) || d.Attempts != 1 {
		t.Fatalf("delivery = %+v, want refused on the first attempt", d)
	}
	if events, _ := r.received(); len(events) != 0 {
		t.Fatalf("the refused webhook received %d events", len(events))
	}
	if got := testutil.ToFloat64(s.metrics.deliveries.WithLabelValues("refused")); got != 1 {
		t.Fatalf("refused deliveries = %v", got)
	}
}

func TestUnsignedWhenTheProjectHasNoKey(t *testing.T) {
	var sig []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sig = append(sig, r.Header.Get(SignatureHeader))
		mu.Unlock()
	}))
	defer srv.Close()
	s := newSender(t, nil)
	s.DocumentChanged("p", "doc", Target{URL: srv.URL, Policy: quick})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sig) != 1 || sig[0] != "" {
		t.Fatalf("signature headers %q, want one empty", sig)
	}
}

func TestCloseSendsScheduledEventsAndDropsLaterChanges(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock = clk })
	s.DocumentChanged("p", "doc", target(r.srv.URL))
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.DocumentChanged("p", "doc", target(r.srv.URL))
	clk.Advance(time.Hour)
	events, bad := r.received()
	if len(events) != 1 || len(bad) != 0 {
		t.Fatalf("events %v, failed checks %v; want the one scheduled before Close", events, bad)
	}
	if got := testutil.ToFloat64(s.metrics.changes.WithLabelValues("dropped")); got != 1 {
		t.Fatalf("dropped changes = %v, want 1", got)
	}
}

func TestCloseCutsDeliveriesWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	on, ch := deliveries()
	s := newSender(t, func(c *Config) { c.OnDelivery = on })
	tg := target(srv.URL)
	tg.Policy.Timeout = time.Hour
	s.DocumentChanged("p", "doc", tg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if d := awaitDelivery(t, ch); d.Err == nil {
		t.Fatalf("delivery = %+v, want cut", d)
	}
}

func TestMaxPendingBoundsTheBacklog(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock, c.MaxPending = clk, 2 })
	for _, doc := range []string{"a", "b", "c", "a"} {
		s.DocumentChanged("p", doc, target(r.srv.URL))
	}
	if got := testutil.ToFloat64(s.metrics.changes.WithLabelValues("dropped")); got != 1 {
		t.Fatalf("dropped = %v, want 1 (document c)", got)
	}
	clk.Advance(time.Second)
	r.await(t)
	r.await(t)
	// Delivered events free their places.
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if events, _ := r.received(); len(events) != 2 {
		t.Fatalf("events = %d, want 2", len(events))
	}
}

func TestNewRefusesMissingHTTPClient(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without HTTPClient succeeded")
	}
}

func BenchmarkDocumentChangedDebounced(b *testing.B) {
	clk := webhooktest.NewClock(t0)
	s := newSender(b, func(c *Config) { c.Clock = clk })
	// No retries: the fake clock never moves, and Close's flush of this
	// event must not wait for a backoff.
	tg := Target{URL: "http://127.0.0.1:1/", SigningKey: secret, Policy: webhook.Policy{Timeout: time.Second}}
	s.DocumentChanged("project", "document", tg)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.DocumentChanged("project", "document", tg)
	}
}

// quiet drops the warnings the failure tests cause on purpose.
var quiet = slog.New(slog.DiscardHandler)

// TestADeadWebhookDelaysOnlyItsProject: a project whose webhook accepts and
// never answers, with more changed documents than there are workers, holds
// at most its share of the workers; another project's event is delivered
// while all of its own are still stuck.
func TestADeadWebhookDelaysOnlyItsProject(t *testing.T) {
	stuck := make(chan struct{})
	var arrivedMu sync.Mutex
	arrived := 0
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		arrivedMu.Lock()
		arrived++
		arrivedMu.Unlock()
		select {
		case <-stuck:
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(dead.Close)
	defer close(stuck)
	victim := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock, c.Workers, c.WorkersPerProject = clk, 4, 2 })
	deadTarget := target(dead.URL)
	deadTarget.Policy.Timeout = time.Hour
	for i := range 8 {
		s.DocumentChanged("attacker", fmt.Sprintf("doc-%d", i), deadTarget)
	}
	clk.Advance(time.Second)
	s.DocumentChanged("victim", "doc", target(victim.srv.URL))
	clk.Advance(time.Second)
	if b := victim.await(t); b.Attributes.Key != "doc" {
		t.Fatalf("victim's event = %+v", b)
	}
	arrivedMu.Lock()
	defer arrivedMu.Unlock()
	if arrived > 2 {
		t.Fatalf("the dead webhook holds %d deliveries, want at most its 2 workers", arrived)
	}
}

// TestProjectBacklogIsBounded: one project filling its own backlog drops its
// further changes, counted by project, and leaves room for others.
func TestProjectBacklogIsBounded(t *testing.T) {
	r := newReceiver(t, nil)
	clk := webhooktest.NewClock(t0)
	s := newSender(t, func(c *Config) { c.Clock, c.MaxPendingPerProject = clk, 2 })
	for _, doc := range []string{"a", "b", "c"} {
		s.DocumentChanged("busy", doc, target(r.srv.URL))
	}
	s.DocumentChanged("other", "x", target(r.srv.URL))
	if got := testutil.ToFloat64(s.metrics.droppedBy.WithLabelValues("busy")); got != 1 {
		t.Fatalf("dropped for the busy project = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.metrics.droppedBy.WithLabelValues("other")); got != 0 {
		t.Fatalf("dropped for the other project = %v, want 0", got)
	}
	clk.Advance(time.Second)
	for range 3 {
		r.await(t)
	}
}
