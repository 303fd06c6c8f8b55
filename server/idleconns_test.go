package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// testCloser returns an idleCloser whose grace the test ends (fire) and
// the channel it reports each connection it closes on.
func testCloser() (*idleCloser, *manualTimers, chan net.Conn) {
	timers := &manualTimers{}
	closer := newIdleCloser(goAwayGrace)
	closer.afterFunc = timers.afterFunc
	closed := make(chan net.Conn, 8)
	closer.closed = func(c net.Conn) { closed <- c }
	return closer, timers, closed
}

// pipeConn is the server's end of a connection; reading the client's end
// tells whether the server closed it.
func pipeConn(t *testing.T) (server, client net.Conn) {
	server, client = net.Pipe()
	t.Cleanup(func() {
		_ = server.Close()
		_ = client.Close()
	})
	return server, client
}

func requireClosed(t *testing.T, client net.Conn) {
	t.Helper()
	_, err := client.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF), "the server's end was closed: %v", err)
}

// Once the port shuts down, a connection with no request in flight is
// closed after the grace (HTTP/2 ones included: net/http would wait for
// the peer, or a second); one serving a request is left alone until its
// last request ends, then closed after the grace too; one whose state
// changed during the grace is not.
func TestIdleCloserClosesIdleConnectionsOnShutdown(t *testing.T) {
	closer, timers, closed := testCloser()
	idleSrv, idleClient := pipeConn(t)
	busySrv, busyClient := pipeConn(t)
	wokenSrv, _ := pipeConn(t)
	closer.connState(idleSrv, http.StateNew)
	closer.connState(idleSrv, http.StateIdle)
	closer.connState(busySrv, http.StateActive)
	closer.connState(wokenSrv, http.StateIdle)

	closer.shutdown()
	require.Equal(t, 2, timers.count(), "the two idle connections are to be closed after the grace")
	closer.connState(wokenSrv, http.StateActive) // a request came in the grace
	timers.fire()
	require.Equal(t, idleSrv, <-closed)
	requireClosed(t, idleClient)
	require.Empty(t, closed, "neither the busy connection nor the one that woke up is closed")

	closer.connState(busySrv, http.StateIdle) // its last request ended
	require.Equal(t, 1, timers.count())
	timers.fire()
	require.Equal(t, busySrv, <-closed)
	requireClosed(t, busyClient)
}

// Before the shutdown, nothing is closed, and connections the server is
// done with are forgotten.
func TestIdleCloserLeavesConnectionsBeforeShutdown(t *testing.T) {
	closer, timers, _ := testCloser()
	a, _ := pipeConn(t)
	b, _ := pipeConn(t)
	closer.connState(a, http.StateIdle)
	closer.connState(b, http.StateIdle)
	closer.connState(b, http.StateClosed)
	require.Zero(t, timers.count())
	closer.mu.Lock()
	require.Len(t, closer.conns, 1, "a closed connection is forgotten")
	closer.mu.Unlock()
}

// A real port: a shutdown with an idle cleartext HTTP/2 connection open (a
// node that relayed a Watch stream here) returns once the connection is
// closed. The time is logged: about the grace, where net/http alone waits
// a second for Go's client, which never closes it.
func TestShutdownWithIdleHTTP2Connection(t *testing.T) {
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}), slog.New(slog.DiscardHandler), time.Minute)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protocols}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String())
	require.NoError(t, err)
	require.Equal(t, 2, resp.ProtoMajor)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	start := time.Now()
	require.NoError(t, srv.Shutdown(context.Background()))
	t.Logf("shutdown with an idle HTTP/2 connection took %v", time.Since(start))
}
