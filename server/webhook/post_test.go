package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/webhook"
	"github.com/yorkie-affinity/yorkie/server/webhook/webhooktest"
)

func TestBackoffDoublesUpToTheBound(t *testing.T) {
	p := webhook.Policy{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for n, w := range want {
		if got := p.Backoff(n); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := p.Backoff(1 << 20); got != time.Second {
		t.Errorf("Backoff(huge) = %v", got)
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, p := range []webhook.Policy{
		{},
		{Timeout: time.Second, MaxRetries: -1},
		{Timeout: time.Second, MinBackoff: 2 * time.Second, MaxBackoff: time.Second},
	} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	if err := (webhook.Policy{Timeout: time.Second}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestPostWaitsTheBackoffOnTheClock(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	clk := webhooktest.NewClock(time.Unix(0, 0))
	p := webhook.Policy{Timeout: 5 * time.Second, MaxRetries: 1, MinBackoff: time.Minute, MaxBackoff: time.Minute}
	type result struct {
		ans webhook.Answer
		err error
	}
	done := make(chan result)
	go func() {
		ans, err := webhook.Post(context.Background(), webhook.NewHTTPClient(webhook.HTTPClientConfig{}), clk, p, webhook.Request{URL: srv.URL})
		done <- result{ans, err}
	}()
	// The retry waits for the clock: move it once the wait is armed.
	clk.AwaitTimers(1)
	clk.Advance(time.Minute)
	r := <-done
	if r.err != nil || r.ans.Status != http.StatusOK || r.ans.Attempts != 2 {
		t.Fatalf("Post = %+v, %v; want 200 on the second attempt", r.ans, r.err)
	}
}

func TestPostCutsLongAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 100)))
	}))
	defer srv.Close()
	ans, err := webhook.Post(context.Background(), webhook.NewHTTPClient(webhook.HTTPClientConfig{}), webhook.SystemClock(),
		webhook.Policy{Timeout: 5 * time.Second}, webhook.Request{URL: srv.URL, MaxAnswer: 10})
	if err != nil || !ans.Truncated || len(ans.Body) != 10 {
		t.Fatalf("Post = %+v, %v; want a 10-byte truncated body", ans, err)
	}
}

func TestPostRefusesBadURLsWithoutTrying(t *testing.T) {
	for _, u := range []string{"", "example.com/hook", "ftp://example.com/", "http://", "http://[::1"} {
		ans, err := webhook.Post(context.Background(), webhook.NewHTTPClient(webhook.HTTPClientConfig{}), webhook.SystemClock(),
			webhook.Policy{Timeout: time.Second, MaxRetries: 5}, webhook.Request{URL: u})
		if !errors.Is(err, webhook.ErrInvalidURL) || ans.Attempts != 0 {
			t.Errorf("%q: %+v, %v; want webhook.ErrInvalidURL without an attempt", u, ans, err)
		}
	}
}

func TestDefaultPolicyIsValid(t *testing.T) {
	if err := webhook.DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
}
