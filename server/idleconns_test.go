package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
)

// manualTimers holds the closes an idleCloser schedules until the test
// fires them.
type manualTimers struct {
	mu      sync.Mutex
	pending []func()
}

func (m *manualTimers) afterFunc(_ time.Duration, f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, f)
}

func (m *manualTimers) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

func (m *manualTimers) fire() {
	m.mu.Lock()
	fs := m.pending
	m.pending = nil
	m.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// h2cServer serves h on a free port over HTTP/1.1 and cleartext HTTP/2
// with an idleCloser whose grace the test ends (timers.fire) and which
// reports each connection it closes on the channel.
func h2cServer(t *testing.T, h http.Handler) (*http.Server, *manualTimers, chan net.Conn, string) {
	t.Helper()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &protocols}
	timers := &manualTimers{}
	closer := newIdleCloser(goAwayGrace)
	closer.afterFunc = timers.afterFunc
	closedConns := make(chan net.Conn, 8)
	closer.closed = func(c net.Conn) { closedConns <- c }
	closer.install(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return srv, timers, closedConns, "http://" + ln.Addr().String()
}

// h2cClient speaks cleartext HTTP/2 with prior knowledge, as nodes relaying
// Watch streams to each other do.
func h2cClient(t *testing.T) *http.Client {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protocols}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// An HTTP/2 connection with no stream open does not hold a shutdown up
// until the peer closes it (Go's client never does) or net/http's
// one-second GOAWAY timer: the server closes it after the grace.
func TestShutdownClosesIdleHTTP2Connections(t *testing.T) {
	srv, timers, closedConns, url := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	resp, err := h2cClient(t).Get(url)
	require.NoError(t, err)
	require.Equal(t, 2, resp.ProtoMajor)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "ok", string(b))

	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(context.Background()) }()
	poll.UntilTrue(t, 10*time.Second, "the idle connection's close is scheduled", func() bool { return timers.count() > 0 })
	timers.fire()
	<-closedConns
	require.NoError(t, <-shutdown)
}

// A connection whose stream is still being served is left to finish it,
// and closed once it has been idle for the grace.
func TestShutdownLetsHTTP2StreamsFinish(t *testing.T) {
	release := make(chan struct{})
	srv, timers, closedConns, url := h2cServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write([]byte("done"))
	}))
	resp, err := h2cClient(t).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()

	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(context.Background()) }()
	// The shutdown has begun once the server refuses new connections.
	poll.UntilTrue(t, 10*time.Second, "the server refuses connections", func() bool {
		c, err := net.Dial("tcp", url[len("http://"):])
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	})
	timers.fire() // nothing is idle yet
	select {
	case <-closedConns:
		t.Fatal("a connection with a stream in flight was closed")
	case err := <-shutdown:
		t.Fatalf("Shutdown returned with a stream in flight: %v", err)
	default:
	}

	close(release)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "done", string(b))
	poll.UntilTrue(t, 10*time.Second, "the ended stream's connection is scheduled to close", func() bool { return timers.count() > 0 })
	timers.fire()
	<-closedConns
	require.NoError(t, <-shutdown)
}
