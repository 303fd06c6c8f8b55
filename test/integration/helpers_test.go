package integration_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// wantError fails t unless err is a Connect error with the code and an
// ErrorInfo detail whose metadata "code" is name.
func wantError(t testing.TB, err error, code connect.Code, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s %s", code, name)
	}
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("got %T %v, want a connect error %s %s", err, err, code, name)
	}
	if cerr.Code() != code {
		t.Fatalf("got code %s (%v), want %s %s", cerr.Code(), err, code, name)
	}
	if got := wire.ErrorInfo(cerr)["code"]; got != name {
		t.Fatalf("got ErrorInfo code %q (%v), want %q", got, err, name)
	}
}

// forEachProtocol runs f once per wire protocol against a fresh server
// configured by opts.
func forEachProtocol(t *testing.T, f func(t *testing.T, c v1connect.YorkieServiceClient, srv *server.Server), opts ...func(*server.Config)) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			srv := servertest.Start(t, opts...)
			f(t, servertest.Client(t, srv, p), srv)
		})
	}
}

// newReplica activates a client with a fresh key. A bad answer fails the
// test at once: these tests expect specific refusals and must not take a
// broken answer for one.
func newReplica(t testing.TB, c v1connect.YorkieServiceClient) *wire.Replica {
	t.Helper()
	r := wire.NewReplica(t, c)
	r.FailFast = true
	return r
}

// attachedReplica returns a replica of a fresh client attached to a fresh
// document.
func attachedReplica(t testing.TB, c v1connect.YorkieServiceClient) *wire.Replica {
	t.Helper()
	r := newReplica(t, c)
	r.MustAttach(wire.UniqueKey(t, "doc"))
	return r
}

// attachedPair returns two replicas of fresh clients, both attached to one
// fresh document, and the document's key.
func attachedPair(t testing.TB, c v1connect.YorkieServiceClient) (a, b *wire.Replica, docKey string) {
	t.Helper()
	docKey = wire.UniqueKey(t, "doc")
	a, b = newReplica(t, c), newReplica(t, c)
	a.MustAttach(docKey)
	b.MustAttach(docKey)
	return a, b, docKey
}

// docEvent returns the document event of a Watch message, failing t if the
// message is something else.
func docEvent(t testing.TB, docID string, m *api.WatchResponse) *api.DocEvent {
	t.Helper()
	ev := m.GetEvent().GetDocEvent()
	if ev == nil {
		t.Fatalf("got watch message %v, want a document event", m)
	}
	if ev.GetDocumentId() != docID {
		t.Fatalf("event for document %q, want %q", ev.GetDocumentId(), docID)
	}
	return ev.GetEvent()
}

// wantEvent fails t unless ev has the type and publisher.
func wantEvent(t testing.TB, ev *api.DocEvent, typ api.DocEventType, publisher string) {
	t.Helper()
	if ev.GetType() != typ || ev.GetPublisher() != publisher {
		t.Fatalf("got event %s from %s, want %s from %s", ev.GetType(), ev.GetPublisher(), typ, publisher)
	}
}

// startNode starts a node with cfg on a loopback port, logging nothing.
func startNode(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	cfg.Host = "127.0.0.1"
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(context.Background(), cfg)
	wire.Must(t, err, "new server")
	wire.Must(t, srv.Start(context.Background()), "start server")
	return srv
}

// stopNode shuts srv down as a node stopping for a restart does.
func stopNode(t testing.TB, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wire.Must(t, srv.Shutdown(ctx), "shut down")
}
