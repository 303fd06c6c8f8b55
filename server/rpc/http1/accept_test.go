package http1_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/rpc/http1"
)

// testConfig serves the PushPullChanges path on the fast loop.
func testConfig(fallback *http.Server) http1.Config {
	return http1.Config{
		Fallback:        fallback,
		Paths:           []string{pushPullPath},
		MaxRequestBytes: 1 << 20,
		ReadBodyTimeout: time.Minute,
	}
}

// flakyListener fails its first accepts with errs, then accepts as ln does.
type flakyListener struct {
	net.Listener
	errs   []error
	failed atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if n := int(l.failed.Add(1)); n <= len(l.errs) {
		return nil, l.errs[n-1]
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesTemporaryErrors: accept errors that pass (out of
// descriptors, an aborted connection) leave the loop serving.
func TestAcceptSurvivesTemporaryErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accept := func(errno syscall.Errno) error {
		return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	}
	flaky := &flakyListener{Listener: ln, errs: []error{
		accept(syscall.EMFILE), accept(syscall.ENFILE), accept(syscall.ECONNABORTED), accept(syscall.EMFILE),
	}}
	fallback := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "served")
	}), ReadHeaderTimeout: time.Minute}
	srv, err := http1.New(testConfig(fallback))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(flaky) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("after temporary accept errors: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(body) != "served" {
		t.Fatalf("answer %q", body)
	}
}

// TestAcceptStopsOnPermanentError: any other accept error ends Serve with
// it, so that the server can give up what it holds.
func TestAcceptStopsOnPermanentError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	broken := errors.New("listener broke")
	srv, err := http1.New(testConfig(&http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Serve(&flakyListener{Listener: ln, errs: []error{broken}})
	if !errors.Is(err, broken) || !strings.Contains(fmt.Sprint(err), "accept") {
		t.Fatalf("Serve returned %v, want the accept error", err)
	}
}
