package authwebhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/webhooktest"
)

// hook is an auth webhook service on a real TCP port.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
	heads  []http.Header
	answer func(n int, req requestBody) (int, string)
}

func newHook(t testing.TB, answer func(n int, req requestBody) (int, string)) *hook {
	h := &hook{answer: answer}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var req requestBody
		_ = json.Unmarshal(raw, &req)
		h.mu.Lock()
		h.bodies = append(h.bodies, r.Method+" "+string(raw))
		h.heads = append(h.heads, r.Header.Clone())
		n := len(h.bodies)
		h.mu.Unlock()
		status, body := h.answer(n, req)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) hits() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func allow(int, requestBody) (int, string) { return http.StatusOK, `{"allowed":true}` }

var quick = webhook.Policy{Timeout: 5 * time.Second, MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

func settings(url string, methods ...string) Settings {
	if len(methods) == 0 {
		methods = []string{"ActivateClient", "AttachDocument", "PushPull", "Watch"}
	}
	return Settings{URL: url, Methods: methods, Policy: quick}
}

func newClient(t testing.TB, mod func(*Config)) (*Client, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	cfg := Config{HTTPClient: webhook.NewHTTPClient(webhook.HTTPClientConfig{}), Registerer: reg, Logger: quiet}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func attach(token, key string) Request {
	return Request{Project: "pk", Token: token, Method: "AttachDocument", Attributes: []Attribute{{Key: key, Verb: ReadWrite}}}
}

// errorInfo returns the ErrorInfo metadata of a Connect error.
func errorInfo(t *testing.T, cerr *connect.Error) map[string]string {
	t.Helper()
	for _, d := range cerr.Details() {
		msg, err := d.Value()
		if err != nil {
			t.Fatal(err)
		}
		if info, ok := msg.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	t.Fatalf("no ErrorInfo in %v", cerr)
	return nil
}

func assertConnect(t *testing.T, err error, code connect.Code, name, reason string) {
	t.Helper()
	cerr, ok := ConnectError(err)
	if !ok {
		t.Fatalf("ConnectError(%v) not mapped", err)
	}
	if cerr.Code() != code {
		t.Fatalf("code = %v, want %v", cerr.Code(), code)
	}
	md := errorInfo(t, cerr)
	if md["code"] != name || md["reason"] != reason {
		t.Fatalf("ErrorInfo metadata = %v, want code %s reason %q", md, name, reason)
	}
}

func TestCheckSendsUpstreamRequestAndAllows(t *testing.T) {
	h := newHook(t, allow)
	c, reg := newClient(t, nil)
	if err := c.Check(context.Background(), settings(h.srv.URL), attach("token-1", "doc-1")); err != nil {
		t.Fatalf("Check = %v, want allowed", err)
	}
	want := `POST {"token":"token-1","method":"AttachDocument","attributes":[{"key":"doc-1","verb":"rw"}]}`
	if h.bodies[0] != want {
		t.Fatalf("webhook got %s\nwant %s", h.bodies[0], want)
	}
	if ct := h.heads[0].Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if got := testutil.ToFloat64(c.metrics.calls.WithLabelValues("allowed")); got != 1 {
		t.Fatalf("allowed calls = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "yorkie_auth_webhook_calls_total", "yorkie_auth_webhook_call_seconds",
		"yorkie_auth_webhook_cache_total", "yorkie_auth_webhook_requests_total"); err != nil || n == 0 {
		t.Fatalf("metrics not registered: %d, %v", n, err)
	}
}

func TestCheckWithoutDocumentsSendsNullAttributes(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, nil)
	if err := c.Check(context.Background(), settings(h.srv.URL), Request{Project: "pk", Token: "t", Method: "ActivateClient"}); err != nil {
		t.Fatal(err)
	}
	if want := `POST {"token":"t","method":"ActivateClient","attributes":null}`; h.bodies[0] != want {
		t.Fatalf("webhook got %s, want %s", h.bodies[0], want)
	}
}

func TestCheckAllowsOneDocumentAndDeniesAnother(t *testing.T) {
	h := newHook(t, func(_ int, req requestBody) (int, string) {
		if len(req.Attributes) == 1 && req.Attributes[0].Key == "open" {
			return http.StatusOK, `{"allowed":true}`
		}
		return http.StatusForbidden, `{"allowed":false,"reason":"not your document"}`
	})
	c, _ := newClient(t, nil)
	ctx := context.Background()
	if err := c.Check(ctx, settings(h.srv.URL), attach("t", "open")); err != nil {
		t.Fatalf("open: %v", err)
	}
	err := c.Check(ctx, settings(h.srv.URL), attach("t", "closed"))
	if !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("closed: %v, want ErrPermissionDenied", err)
	}
	if Reason(err) != "not your document" {
		t.Fatalf("Reason = %q", Reason(err))
	}
	assertConnect(t, err, connect.CodePermissionDenied, CodePermissionDenied, "not your document")
}

func TestCheckUnauthenticatedIsNotCached(t *testing.T) {
	h := newHook(t, func(n int, _ requestBody) (int, string) {
		if n == 1 {
			return http.StatusUnauthorized, `{"allowed":false,"reason":"token expired"}`
		}
		return http.StatusOK, `{"allowed":true}`
	})
	c, _ := newClient(t, nil)
	ctx := context.Background()
	err := c.Check(ctx, settings(h.srv.URL), attach("t", "doc"))
	if !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("first: %v, want ErrUnauthenticated", err)
	}
	assertConnect(t, err, connect.CodeUnauthenticated, CodeUnauthenticated, "token expired")
	// The SDK asks its authTokenInjector and retries; the same token is asked
	// about again rather than refused from the cache.
	if err := c.Check(ctx, settings(h.srv.URL), attach("t", "doc")); err != nil {
		t.Fatalf("second: %v", err)
	}
	if h.hits() != 2 {
		t.Fatalf("webhook hits = %d, want 2", h.hits())
	}
}

func TestCheckSkipsUnguardedMethods(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, nil)
	if err := c.Check(context.Background(), settings(h.srv.URL, "AttachDocument"), Request{Method: "PushPull"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(context.Background(), Settings{URL: h.srv.URL, Policy: quick}, attach("t", "d")); err != nil {
		t.Fatal(err)
	}
	if h.hits() != 0 {
		t.Fatalf("webhook hits = %d, want 0", h.hits())
	}
}

func TestGuardsWatchAliases(t *testing.T) {
	for _, tc := range []struct {
		configured, method string
		want               bool
	}{
		{"Watch", "Watch", true},
		{"WatchDocument", "Watch", true},
		{"WatchChannel", "Watch", true},
		{"Watch", "WatchDocument", true},
		{"WatchDocument", "WatchChannel", false},
		{"PushPull", "Watch", false},
	} {
		if got := (Settings{URL: "http://x", Methods: []string{tc.configured}}).Guards(tc.method); got != tc.want {
			t.Errorf("%s guards %s = %v, want %v", tc.configured, tc.method, got, tc.want)
		}
	}
}

func TestCacheAnswersSecondIdenticalCall(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, nil)
	ctx := context.Background()
	for range 3 {
		if err := c.Check(ctx, settings(h.srv.URL), attach("t", "doc")); err != nil {
			t.Fatal(err)
		}
	}
	if h.hits() != 1 {
		t.Fatalf("webhook hits = %d, want 1", h.hits())
	}
	if hits := testutil.ToFloat64(c.metrics.cache.WithLabelValues("hit")); hits != 2 {
		t.Fatalf("cache hits = %v, want 2", hits)
	}
	// Another token, another document or another project is another question.
	_ = c.Check(ctx, settings(h.srv.URL), attach("u", "doc"))
	_ = c.Check(ctx, settings(h.srv.URL), attach("t", "doc2"))
	other := attach("t", "doc")
	other.Project = "pk2"
	_ = c.Check(ctx, settings(h.srv.URL), other)
	if h.hits() != 4 {
		t.Fatalf("webhook hits = %d, want 4", h.hits())
	}
}

func TestCacheExpiresAllowedAndDeniedSeparately(t *testing.T) {
	h := newHook(t, func(_ int, req requestBody) (int, string) {
		if req.Token == "good" {
			return http.StatusOK, `{"allowed":true}`
		}
		return http.StatusForbidden, `{"allowed":false,"reason":"no"}`
	})
	clk := webhooktest.NewClock(time.Unix(1_000_000, 0))
	c, _ := newClient(t, func(cfg *Config) {
		cfg.Clock = clk
		cfg.AllowedTTL = 10 * time.Second
		cfg.DeniedTTL = 2 * time.Second
	})
	ctx := context.Background()
	check := func(token string) error { return c.Check(ctx, settings(h.srv.URL), attach(token, "doc")) }
	if err := check("good"); err != nil {
		t.Fatal(err)
	}
	if err := check("bad"); !errors.Is(err, ErrPermissionDenied) {
		t.Fatal(err)
	}
	if err := check("bad"); !errors.Is(err, ErrPermissionDenied) || Reason(err) != "no" {
		t.Fatalf("cached denial = %v", err)
	}
	if h.hits() != 2 {
		t.Fatalf("hits = %d, want 2", h.hits())
	}
	clk.Advance(2 * time.Second) // the denial expires, the allowance does not
	_ = check("good")
	_ = check("bad")
	if h.hits() != 3 {
		t.Fatalf("hits after the denied TTL = %d, want 3", h.hits())
	}
	clk.Advance(8 * time.Second)
	_ = check("good")
	if h.hits() != 4 {
		t.Fatalf("hits after the allowed TTL = %d, want 4", h.hits())
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, func(cfg *Config) { cfg.AllowedCacheSize = 2 })
	ctx := context.Background()
	for _, doc := range []string{"a", "b", "a", "c", "a", "b"} {
		if err := c.Check(ctx, settings(h.srv.URL), attach("t", doc)); err != nil {
			t.Fatal(err)
		}
	}
	// a, b asked; a cached; c evicts b; a cached; b asked again.
	if h.hits() != 4 {
		t.Fatalf("hits = %d, want 4", h.hits())
	}
}

func TestCacheOff(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, func(cfg *Config) { cfg.AllowedCacheSize = -1 })
	for range 2 {
		_ = c.Check(context.Background(), settings(h.srv.URL), attach("t", "d"))
	}
	if h.hits() != 2 {
		t.Fatalf("hits = %d, want 2", h.hits())
	}
}

func TestRetriesThenAllows(t *testing.T) {
	h := newHook(t, func(n int, _ requestBody) (int, string) {
		switch n {
		case 1:
			return http.StatusServiceUnavailable, "down"
		case 2:
			return http.StatusTooManyRequests, ""
		}
		return http.StatusOK, `{"allowed":true}`
	})
	c, _ := newClient(t, nil)
	if err := c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc")); err != nil {
		t.Fatal(err)
	}
	if h.hits() != 3 {
		t.Fatalf("hits = %d, want 3", h.hits())
	}
	if got := testutil.ToFloat64(c.metrics.attempts); got != 3 {
		t.Fatalf("requests metric = %v, want 3", got)
	}
}

func TestRetriesAreBoundedAndFailClosed(t *testing.T) {
	h := newHook(t, func(int, requestBody) (int, string) { return http.StatusInternalServerError, "" })
	c, _ := newClient(t, nil)
	err := c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check = %v, want ErrUnavailable", err)
	}
	if h.hits() != quick.MaxRetries+1 {
		t.Fatalf("hits = %d, want %d", h.hits(), quick.MaxRetries+1)
	}
	// A failure is not cached: the next call asks again.
	_ = c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc"))
	if h.hits() != 2*(quick.MaxRetries+1) {
		t.Fatalf("hits = %d after a second call", h.hits())
	}
}

func TestDownWebhookFailsClosed(t *testing.T) {
	h := newHook(t, allow)
	url := h.srv.URL
	h.srv.Close()
	c, _ := newClient(t, nil)
	s := settings(url)
	s.Policy.Timeout = 50 * time.Millisecond // a refused attempt lasts its timeout
	err := c.Check(context.Background(), s, attach("t", "doc"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check = %v, want ErrUnavailable", err)
	}
	assertConnect(t, err, connect.CodeInternal, CodeWebhookTimeout, "")
	cerr, _ := ConnectError(err)
	if strings.Contains(cerr.Message(), strings.TrimPrefix(url, "http://")) {
		t.Fatalf("client message %q reveals the webhook's address", cerr.Message())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("a webhook failure must not look like the caller's context: %v", err)
	}
}

func TestSlowWebhookIsCutAtTheTimeout(t *testing.T) {
	release := make(chan struct{})
	h := newHook(t, func(int, requestBody) (int, string) {
		<-release
		return http.StatusOK, `{"allowed":true}`
	})
	defer close(release) // before the server's Close, which waits for handlers
	c, _ := newClient(t, nil)
	s := settings(h.srv.URL)
	s.Policy = webhook.Policy{Timeout: 50 * time.Millisecond, MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	err := c.Check(context.Background(), s, attach("t", "doc"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Check = %v, want ErrUnavailable", err)
	}
	if h.hits() != 2 {
		t.Fatalf("hits = %d, want 2 (one retry)", h.hits())
	}
	if got := testutil.ToFloat64(c.metrics.calls.WithLabelValues("unavailable")); got != 1 {
		t.Fatalf("unavailable calls = %v", got)
	}
}

func TestMalformedAnswersFailClosed(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"not json":               {200, "allowed"},
		"empty":                  {200, ""},
		"array":                  {200, `[true]`},
		"allowed as string":      {200, `{"allowed":"true"}`},
		"trailing data":          {200, `{"allowed":true} {}`},
		"200 without allowed":    {200, `{"reason":"ok"}`},
		"403 yet allowed":        {403, `{"allowed":true}`},
		"401 yet allowed":        {401, `{"allowed":true}`},
		"unexpected status":      {404, `{"allowed":true}`},
		"bad request":            {400, `{"allowed":false}`},
		"redirect":               {302, `{"allowed":true}`},
		"longer than the bound":  {200, `{"allowed":true,"reason":"` + strings.Repeat("x", 200) + `"}`},
		"reason of another type": {403, `{"allowed":false,"reason":7}`},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHook(t, func(int, requestBody) (int, string) { return tc.status, tc.body })
			c, _ := newClient(t, func(cfg *Config) { cfg.MaxAnswerBytes = 128 })
			err := c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc"))
			if !errors.Is(err, ErrInvalidAnswer) {
				t.Fatalf("Check = %v, want ErrInvalidAnswer", err)
			}
			assertConnect(t, err, connect.CodeInternal, CodeInvalidJSONResponse, "")
			_ = c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc"))
			if h.hits() != 2 {
				t.Fatalf("an invalid answer was cached: hits = %d", h.hits())
			}
		})
	}
}

func TestRefusedAddressFailsClosedWithoutCalling(t *testing.T) {
	h := newHook(t, allow)
	c, _ := newClient(t, func(cfg *Config) {
		cfg.HTTPClient = webhook.NewHTTPClient(webhook.HTTPClientConfig{RefusePrivate: true})
	})
	err := c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc"))
	if !errors.Is(err, ErrMisconfigured) {
		t.Fatalf("Check = %v, want ErrMisconfigured", err)
	}
	assertConnect(t, err, connect.CodeInternal, CodeInvalidWebhookURL, "")
	if h.hits() != 0 {
		t.Fatalf("hits = %d, want 0", h.hits())
	}
}

func TestMisconfiguredWebhookFailsClosed(t *testing.T) {
	c, _ := newClient(t, nil)
	for _, s := range []Settings{
		{URL: "ftp://example.com/hook", Methods: []string{"PushPull"}, Policy: quick},
		{URL: "/relative", Methods: []string{"PushPull"}, Policy: quick},
		{URL: "http://127.0.0.1:1/", Methods: []string{"PushPull"}}, // no timeout
	} {
		if err := c.Check(context.Background(), s, Request{Method: "PushPull"}); !errors.Is(err, ErrMisconfigured) {
			t.Errorf("%+v: %v, want ErrMisconfigured", s, err)
		}
	}
}

func TestCanceledCallReturnsTheContextError(t *testing.T) {
	h := newHook(t, func(int, requestBody) (int, string) { return http.StatusServiceUnavailable, "" })
	c, _ := newClient(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Check(ctx, settings(h.srv.URL), attach("t", "doc"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Check = %v, want context.Canceled", err)
	}
	if _, ok := ConnectError(err); ok {
		t.Fatal("the caller's own cancellation is not the webhook's error")
	}
	if h.hits() != 0 {
		t.Fatalf("a cancelled check called the webhook %d times", h.hits())
	}
}

func TestConcurrentIdenticalChecksShareOneCall(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	h := newHook(t, func(n int, _ requestBody) (int, string) {
		if n == 1 {
			close(arrived)
			<-release
		}
		return http.StatusOK, `{"allowed":true}`
	})
	c, _ := newClient(t, nil)
	joined := make(chan struct{}, 100)
	c.onJoin = func() { joined <- struct{}{} }
	const n = 10
	errs := make(chan error, n)
	for range n {
		go func() { errs <- c.Check(context.Background(), settings(h.srv.URL), attach("new-token", "doc")) }()
	}
	<-arrived
	for range n - 1 {
		<-joined
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if h.hits() != 1 {
		t.Fatalf("webhook hits = %d, want 1", h.hits())
	}
	if got := testutil.ToFloat64(c.metrics.shared); got != n-1 {
		t.Fatalf("shared = %v, want %d", got, n-1)
	}
}

// TestAWebhookCallEndsWithTheLastCheckWaiting: when the only check waiting
// on a webhook call leaves (its caller went away), the call is cancelled,
// not carried on for the rest of its retry policy; the next check asks the
// webhook afresh.
func TestAWebhookCallEndsWithTheLastCheckWaiting(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	h := newHook(t, func(n int, _ requestBody) (int, string) {
		if n == 1 {
			close(arrived)
			<-release
		}
		return http.StatusOK, `{"allowed":true}`
	})
	defer close(release)
	c, _ := newClient(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Check(ctx, settings(h.srv.URL), attach("t", "doc")) }()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Check = %v, want context.Canceled", err)
	}
	if err := c.Check(context.Background(), settings(h.srv.URL), attach("t", "doc")); err != nil {
		t.Fatal(err)
	}
	if h.hits() != 2 {
		t.Fatalf("webhook hits = %d, want 2: the abandoned call is not shared or cached", h.hits())
	}
}

// TestChecksWaitingOnAWebhookAreBoundedPerProject: a project whose webhook
// never answers holds at most its bound of checks; the next one fails
// closed at once, and another project's checks go on.
func TestChecksWaitingOnAWebhookAreBoundedPerProject(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	dead := newHook(t, func(int, requestBody) (int, string) {
		<-stuck
		return http.StatusOK, `{"allowed":true}`
	})
	live := newHook(t, allow)
	c, _ := newClient(t, func(cfg *Config) { cfg.MaxChecksPerProject = 3 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The dead webhook's calls end only when their checks give up.
	deadSettings := settings(dead.srv.URL)
	deadSettings.Policy = webhook.Policy{Timeout: time.Hour, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	waiting := make(chan error, 3)
	for i := range 3 {
		r := attach(fmt.Sprintf("token-%d", i), "doc")
		go func() { waiting <- c.Check(ctx, deadSettings, r) }()
	}
	poll.UntilTrue(t, time.Minute, "three calls at the dead webhook", func() bool { return dead.hits() == 3 })
	err := c.Check(context.Background(), deadSettings, attach("token-3", "doc"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("check past the project's bound = %v, want ErrUnavailable at once", err)
	}
	other := attach("token-0", "doc")
	other.Project = "other-project"
	if err := c.Check(context.Background(), settings(live.srv.URL), other); err != nil {
		t.Fatalf("another project's check = %v, want allowed", err)
	}
	if got := testutil.ToFloat64(c.metrics.busy); got != 1 {
		t.Fatalf("busy = %v, want 1", got)
	}
	cancel()
	for range 3 {
		if err := <-waiting; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiting check = %v, want context.Canceled", err)
		}
	}
}

func TestANewWebhookURLIsAskedAfresh(t *testing.T) {
	a, b := newHook(t, allow), newHook(t, allow)
	c, _ := newClient(t, nil)
	for _, u := range []string{a.srv.URL, b.srv.URL, a.srv.URL} {
		if err := c.Check(context.Background(), settings(u), attach("t", "doc")); err != nil {
			t.Fatal(err)
		}
	}
	if a.hits() != 1 || b.hits() != 1 {
		t.Fatalf("hits = %d, %d; want 1, 1", a.hits(), b.hits())
	}
}

func TestNewRefusesMissingHTTPClientAndDoubleRegistration(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New without HTTPClient succeeded")
	}
	reg := prometheus.NewRegistry()
	cfg := Config{HTTPClient: http.DefaultClient, Registerer: reg, Logger: quiet}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil {
		t.Fatal("second registration on one registry succeeded")
	}
}

func BenchmarkCheckCached(b *testing.B) {
	h := newHook(b, allow)
	c, _ := newClient(b, nil)
	ctx := context.Background()
	s := settings(h.srv.URL)
	req := attach("a-session-token-of-some-length-0123456789", "document-key")
	if err := c.Check(ctx, s, req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := c.Check(ctx, s, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if h.hits() != 1 {
		b.Fatalf("hits = %d", h.hits())
	}
}

// quiet drops the warnings the failure tests cause on purpose.
var quiet = slog.New(slog.DiscardHandler)

// TestClosedPortFailsLikeASilentOne: a webhook address where nothing
// listens and one that accepts connections and never answers give a client
// the same error after the same attempts, and a refused attempt lasts its
// whole timeout on the clock, as an unanswered one does, so the auth
// webhook cannot be used to tell closed ports from open ones.
func TestClosedPortFailsLikeASilentOne(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())

	policy := webhook.Policy{Timeout: 200 * time.Millisecond, MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	type outcome struct {
		err   error
		waits []time.Duration // what the check waited for on the clock, in order
		calls float64
	}
	check := func(url string, waits int) outcome {
		clk := webhooktest.NewClock(time.Unix(0, 0))
		c, _ := newClient(t, func(cfg *Config) { cfg.Clock = clk })
		s := settings(url)
		s.Policy = policy
		done := make(chan error, 1)
		go func() { done <- c.Check(context.Background(), s, attach("t", "doc")) }()
		var o outcome
		for range waits {
			armed := make(chan struct{})
			go func() { clk.AwaitTimers(1); close(armed) }()
			select {
			case o.err = <-done: // fewer waits than expected: the assertions say so
				o.calls = testutil.ToFloat64(c.metrics.attempts)
				return o
			case <-armed:
			}
			d := clk.NextDue()
			o.waits = append(o.waits, d)
			clk.Advance(d)
		}
		o.err = <-done
		o.calls = testutil.ToFloat64(c.metrics.attempts)
		return o
	}
	// The unanswered attempts end on their own timeout; only the backoff
	// between them is on the clock. The refused ones are held on the clock
	// until their timeout, the backoff between.
	s, cl := check("http://"+silent.Addr().String(), 1), check(closedURL, 3)
	assert.Equal(t, []time.Duration{time.Millisecond}, s.waits)
	assert.Equal(t, []time.Duration{policy.Timeout, time.Millisecond, policy.Timeout}, cl.waits,
		"each refused attempt lasts its timeout")
	require.ErrorIs(t, s.err, ErrUnavailable)
	require.ErrorIs(t, cl.err, ErrUnavailable)
	assert.Equal(t, s.calls, cl.calls, "attempts")
	se, _ := ConnectError(s.err)
	ce, _ := ConnectError(cl.err)
	assert.Equal(t, se.Code(), ce.Code())
	assert.Equal(t, se.Message(), ce.Message())
	assert.Equal(t, errorInfo(t, se), errorInfo(t, ce))
}
