package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestIsPrivate(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1":        true,
		"::1":              true,
		"10.1.2.3":         true,
		"172.16.0.1":       true,
		"192.168.1.1":      true,
		"169.254.169.254":  true, // cloud metadata services
		"fe80::1":          true,
		"fc00::1":          true,
		"100.64.0.1":       true,
		"0.0.0.0":          true,
		"0.1.2.3":          true,
		"::":               true,
		"224.0.0.1":        true,
		"ff02::1":          true,
		"::ffff:127.0.0.1": true,
		"::ffff:10.0.0.1":  true,
		"8.8.8.8":          false,
		"1.1.1.1":          false,
		"2606:4700::1111":  false,
		"172.32.0.1":       false,
		"100.128.0.1":      false,
	} {
		if got := IsPrivate(netip.MustParseAddr(addr)); got != want {
			t.Errorf("IsPrivate(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestRefusingClientRefusesLoopbackAtDialTime(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	refusing := NewHTTPClient(HTTPClientConfig{RefusePrivate: true})
	p := Policy{Timeout: 5 * time.Second, MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	// By address, and by a name that resolves to loopback only when dialled.
	for _, url := range []string{srv.URL, "http://localhost:" + port + "/hook"} {
		ans, err := Post(context.Background(), refusing, SystemClock(), p, Request{URL: url})
		if !errors.Is(err, ErrAddressRefused) {
			t.Fatalf("%s: Post = %v, want ErrAddressRefused", url, err)
		}
		if ans.Attempts != 1 {
			t.Fatalf("%s: %d attempts, want 1 (a refusal is not retried)", url, ans.Attempts)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the refused server was reached %d times", hits.Load())
	}
	// The default client reaches it: the refusal is the option, not the test.
	if ans, err := Post(context.Background(), NewHTTPClient(HTTPClientConfig{}), SystemClock(), p, Request{URL: srv.URL}); err != nil || ans.Status != http.StatusOK {
		t.Fatalf("default client: %+v, %v", ans, err)
	}
}

func TestRefusingClientDoesNotFollowRedirects(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	p := Policy{Timeout: 5 * time.Second}
	ans, err := Post(context.Background(), NewHTTPClient(HTTPClientConfig{}), SystemClock(), p, Request{URL: redirect.URL})
	if err != nil || ans.Status != http.StatusTemporaryRedirect || hits.Load() != 0 {
		t.Fatalf("Post = %+v, %v, target hits %d; want the redirect itself", ans, err, hits.Load())
	}
}
