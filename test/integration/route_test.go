package integration_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestRouterSeesEveryDocumentCall checks that each document call passes the
// routing step with its kind and document key, and that a routing error
// reaches the client instead of the call.
func TestRouterSeesEveryDocumentCall(t *testing.T) {
	type seen struct {
		kind routing.CallKind
		key  string
	}
	var (
		mu     sync.Mutex
		calls  []seen
		refuse = "refused-doc"
	)
	router := funcRouter(func(ctx context.Context, call routing.DocumentCall) error {
		key := call.DocumentKey
		mu.Lock()
		calls = append(calls, seen{call.Kind, key})
		mu.Unlock()
		if key == refuse {
			return connect.NewError(connect.CodeUnavailable, errors.New("not this node"))
		}
		return nil
	})
	srv := servertest.StartWith(t, []server.Option{server.WithRouter(router)})
	c := servertest.Client(t, srv, servertest.ConnectJSON)
	ctx := wire.Context(t)

	docKey := wire.UniqueKey(t, "doc")
	a := newReplica(t, c)
	a.MustAttach(docKey)
	a.MustPushPull()
	w := a.Watch(t)
	w.Next(t)
	w.Close()
	_, err := a.Detach(ctx)
	wire.Must(t, err, "detach")
	a.MustAttach(docKey)
	pack := a.Pack()
	pack.IsRemoved = true
	_, err = c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{ClientId: a.ID, DocumentId: a.DocID, ChangePack: pack}))
	wire.Must(t, err, "remove")

	want := []seen{
		{routing.CallAttach, docKey}, {routing.CallPushPull, docKey}, {routing.CallWatch, docKey},
		{routing.CallDetach, docKey}, {routing.CallAttach, docKey}, {routing.CallRemove, docKey},
	}
	mu.Lock()
	got := slices.Clone(calls)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("routed calls %v, want %v", got, want)
	}

	_, err = newReplica(t, c).Attach(ctx, refuse)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("attach of a refused document: %v, want unavailable", err)
	}
}

// TestShutdownLetsUnaryCallsFinish holds a PushPull inside the routing step
// while the server shuts down: the call completes, then Shutdown returns.
func TestShutdownLetsUnaryCallsFinish(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var hold sync.Once
	router := funcRouter(func(ctx context.Context, call routing.DocumentCall) error {
		if call.Kind == routing.CallPushPull {
			hold.Do(func() {
				close(entered)
				<-release
			})
		}
		return nil
	})
	srv := servertest.StartWith(t, []server.Option{server.WithRouter(router)})
	c := servertest.Client(t, srv, servertest.ConnectProto)
	a := attachedReplica(t, c)
	a.Edit(1)

	callDone := make(chan error, 1)
	go func() {
		_, err := a.C.PushPullChanges(context.Background(), connect.NewRequest(&api.PushPullChangesRequest{
			ClientId: a.ID, DocumentId: a.DocID, ChangePack: a.Pack(),
		}))
		callDone <- err
	}()
	select {
	case <-entered:
	case <-time.After(wire.WaitTimeout):
		t.Fatalf("PushPull never reached the routing step")
	}

	shutdownDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), wire.WaitTimeout)
		defer cancel()
		shutdownDone <- srv.Shutdown(ctx)
	}()
	// Shutdown must wait for the call; it cannot finish while the call is held.
	// Poll with new calls until the server stops taking them.
	poll.UntilTrue(t, wire.WaitTimeout, "the shutting-down server refusing new calls", func() bool {
		_, err := c.ActivateClient(context.Background(), connect.NewRequest(&api.ActivateClientRequest{ClientKey: "probe"}))
		return err != nil
	})
	select {
	case err := <-shutdownDone:
		t.Fatalf("Shutdown returned (%v) while a call was in flight", err)
	default:
	}
	close(release)
	select {
	case err := <-callDone:
		wire.Must(t, err, "in-flight PushPull")
	case <-time.After(wire.WaitTimeout):
		t.Fatalf("in-flight PushPull did not finish")
	}
	select {
	case err := <-shutdownDone:
		wire.Must(t, err, "shutdown")
	case <-time.After(wire.WaitTimeout):
		t.Fatalf("Shutdown did not return after the call finished")
	}
}

// funcRouter serves every call here unless the function refuses it.
type funcRouter func(ctx context.Context, call routing.DocumentCall) error

func (f funcRouter) Route(ctx context.Context, call routing.DocumentCall) (routing.Route, error) {
	return routing.Route{Project: call.Project}, f(ctx, call)
}

func (funcRouter) RelayFailed(context.Context, routing.Route, error) {}

func (funcRouter) DetachRemote(context.Context, *database.ProjectInfo, string) (map[string]int64, error) {
	return nil, nil
}

func (funcRouter) SessionKeyHeader() string { return "x-session-key" }
