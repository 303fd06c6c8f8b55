package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	sessmemory "github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// errBroken is the accept error of a listener that broke for good.
var errBroken = errors.New("listener broke")

// breakableListener accepts as its listener does until Break.
type breakableListener struct {
	net.Listener
	once   sync.Once
	broken chan struct{}
}

func (l *breakableListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	select {
	case <-l.broken:
		if c != nil {
			_ = c.Close()
		}
		return nil, errBroken
	default:
	}
	return c, err
}

// Break makes the pending and every later Accept fail.
func (l *breakableListener) Break() {
	l.once.Do(func() {
		close(l.broken)
		_ = l.Listener.Close()
	})
}

// TestFailedRPCPortGivesUpLease: a node whose RPC port cannot accept any
// more shuts down, releasing its documents and leaving the cluster, instead
// of holding a lease on documents no client can reach.
func TestFailedRPCPortGivesUpLease(t *testing.T) {
	store := sessmemory.New(sessmemory.Config{})
	t.Cleanup(func() { _ = store.Close() })
	var lc net.ListenConfig
	inner, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &breakableListener{Listener: inner, broken: make(chan struct{})}
	s, err := New(context.Background(), Config{ProfilingConfig: ProfilingConfig{ProfilingPort: -1}, ClusterConfig: ClusterConfig{SessionStore: store}, Logger: slog.New(slog.DiscardHandler)},
		WithListeners(ln, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })

	r := wire.NewReplica(t, v1connect.NewYorkieServiceClient(http.DefaultClient, "http://"+s.RPCAddr()))
	key := wire.UniqueKey(t, "doc")
	r.MustAttach(key)
	ctx := wire.Context(t)
	if b, ok, err := store.Resolve(ctx, key); err != nil || !ok || b.Owner.Addr != s.Affinity().Addr() {
		t.Fatalf("binding before the failure: %v %v %v", b, ok, err)
	}

	ln.Break()
	select {
	case <-s.Failed():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not notice its RPC port failed")
	}
	if !errors.Is(s.Err(), errBroken) {
		t.Errorf("Err() = %v, want the accept error", s.Err())
	}
	if _, ok, err := store.Resolve(ctx, key); err != nil || ok {
		t.Errorf("the document is still bound to the failed node (%v, %v)", ok, err)
	}
	if members, err := store.Members(ctx); err != nil || len(members) != 0 {
		t.Errorf("members after the failure: %v %v, want none", members, err)
	}
}
