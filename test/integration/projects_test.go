package integration_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// apiKeyHeader sets the x-api-key header of every call, as the SDK's apiKey
// option does.
type apiKeyHeader string

func (k apiKeyHeader) set(h http.Header) {
	if k != "" {
		h.Set(rpc.HeaderAPIKey, string(k))
	}
}

func (k apiKeyHeader) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		k.set(req.Header())
		return next(ctx, req)
	}
}

func (k apiKeyHeader) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		k.set(conn.RequestHeader())
		return conn
	}
}

func (k apiKeyHeader) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// projectServer starts a server on a memory database holding two projects
// besides the default one, and returns it with their public keys.
func projectServer(t *testing.T, opts ...func(*server.Config)) (*server.Server, string, string) {
	t.Helper()
	ctx := wire.Context(t)
	db := memory.New()
	a, err := db.CreateProject(ctx, "owner", "project-a")
	wire.Must(t, err, "create project a")
	b, err := db.CreateProject(ctx, "owner", "project-b")
	wire.Must(t, err, "create project b")
	srv := servertest.Start(t, append([]func(*server.Config){func(c *server.Config) { c.DB = db }}, opts...)...)
	return srv, a.PublicKey, b.PublicKey
}

// keyedClient is a client of srv sending apiKey ("" sends none).
func keyedClient(t *testing.T, srv *server.Server, p servertest.Protocol, apiKey string) v1connect.YorkieServiceClient {
	return servertest.Client(t, srv, p, connect.WithInterceptors(apiKeyHeader(apiKey)))
}

func TestProjectAPIKeys(t *testing.T) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			ctx := wire.Context(t)
			srv, keyA, _ := projectServer(t)
			activate := func(c v1connect.YorkieServiceClient) error {
				_, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
				return err
			}
			wire.Must(t, activate(keyedClient(t, srv, p, "")), "activate without a key (default project)")
			wire.Must(t, activate(keyedClient(t, srv, p, keyA)), "activate with a project's key")
			wantError(t, activate(keyedClient(t, srv, p, "not-a-key")), connect.CodeNotFound, errinfo.CodeProjectNotFound)

			// Streams are refused as well, before anything is watched.
			bogus := keyedClient(t, srv, p, "not-a-key")
			stream, err := bogus.Watch(ctx, connect.NewRequest(&api.WatchRequest{
				ClientId:  unknownClientID,
				Resources: []*api.ResourceDescriptor{{Resource: &api.ResourceDescriptor_Document{Document: &api.DocumentDescriptor{DocumentId: unknownClientID}}}},
			}))
			if err == nil {
				for stream.Receive() {
					t.Fatalf("watch with an unknown key got %v", stream.Msg())
				}
				err = stream.Err()
				_ = stream.Close()
			}
			wantError(t, err, connect.CodeNotFound, errinfo.CodeProjectNotFound)
		})
	}
}

func TestProjectDefaultOff(t *testing.T) {
	forEachProtocolWith(t, func(t *testing.T, srv *server.Server, p servertest.Protocol, keyA, _ string) {
		ctx := wire.Context(t)
		_, err := keyedClient(t, srv, p, "").ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
		wantError(t, err, connect.CodeUnauthenticated, errinfo.CodeUnauthenticated)
		_, err = keyedClient(t, srv, p, keyA).ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
		wire.Must(t, err, "activate with a project's key")
	}, func(c *server.Config) { c.DisableDefaultProject = true })
}

// forEachProtocolWith runs f once per protocol against a fresh projectServer.
func forEachProtocolWith(t *testing.T, f func(t *testing.T, srv *server.Server, p servertest.Protocol, keyA, keyB string), opts ...func(*server.Config)) {
	for _, p := range servertest.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			srv, a, b := projectServer(t, opts...)
			f(t, srv, p, a, b)
		})
	}
}

func TestProjectsDoNotShareDocuments(t *testing.T) {
	forEachProtocolWith(t, func(t *testing.T, srv *server.Server, p servertest.Protocol, keyA, keyB string) {
		ctx := wire.Context(t)
		ca, cb := keyedClient(t, srv, p, keyA), keyedClient(t, srv, p, keyB)
		a1, a2 := newReplica(t, ca), newReplica(t, ca)
		b1, b2 := newReplica(t, cb), newReplica(t, cb)
		for _, r := range []*wire.Replica{a1, a2, b1, b2} {
			r.MustAttach("shared")
		}
		if a1.DocID != a2.DocID || b1.DocID != b2.DocID || a1.DocID == b1.DocID {
			t.Fatalf("document IDs of key shared: project a %s, %s; project b %s, %s; want one per project",
				a1.DocID, a2.DocID, b1.DocID, b2.DocID)
		}
		for _, r := range []*wire.Replica{a2, b2} {
			r.MustPushPull()
		}
		aw, bw := a2.Watch(t), b2.Watch(t)
		for _, w := range []*wire.Stream[api.WatchResponse]{aw, bw} {
			if w.Next(t).GetInitialization() == nil {
				t.Fatalf("first watch message is not the initialization")
			}
		}
		// Each watcher's next event comes from its own project: a CHANGED
		// of the other project would come first.
		a1.Edit(2)
		a1.MustPushPull()
		b1.Edit(1)
		b1.MustPushPull()
		for _, c := range []struct {
			w         *wire.Stream[api.WatchResponse]
			docID, by string
		}{{aw, a1.DocID, a1.ID}, {bw, b1.DocID, b1.ID}} {
			ev := docEvent(t, c.docID, c.w.Next(t))
			if ev.GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED {
				ev = docEvent(t, c.docID, c.w.Next(t))
			}
			wantEvent(t, ev, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, c.by)
		}
		a2.MustPushPull()
		b2.MustPushPull()
		if len(a2.Seen) != 3 || len(b2.Seen) != 2 {
			t.Fatalf("pulled %d changes in project a (want a1's 2 and its presence), %d in project b (want b1's 1 and its presence)",
				len(a2.Seen), len(b2.Seen))
		}
		for k := range b2.Seen {
			if _, ok := a2.Seen[k]; ok {
				t.Fatalf("change %s reached both projects", k)
			}
		}

		// IDs of one project are unknown to the other.
		cross := *b2
		cross.DocID = a1.DocID
		_, err := cross.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeDocumentNotFound)
		stranger := *a2
		stranger.C = cb
		_, err = stranger.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
		_, err = cb.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: a2.ID}))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
		a2.MustPushPull() // still active in its own project
	})
}

func TestProjectsDoNotShareChannels(t *testing.T) {
	forEachProtocolWith(t, func(t *testing.T, srv *server.Server, p servertest.Protocol, keyA, keyB string) {
		ctx := wire.Context(t)
		attach := func(c v1connect.YorkieServiceClient) int64 {
			r := newReplica(t, c)
			resp, err := c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: r.ID, ChannelKey: "room.1"}))
			wire.Must(t, err, "attach channel")
			return resp.Msg.GetSessionCount()
		}
		ca, cb := keyedClient(t, srv, p, keyA), keyedClient(t, srv, p, keyB)
		if n := attach(ca); n != 1 {
			t.Fatalf("first session of project a counts %d", n)
		}
		if n := attach(ca); n != 2 {
			t.Fatalf("second session of project a counts %d", n)
		}
		if n := attach(cb); n != 1 {
			t.Fatalf("first session of project b on the same channel key counts %d, want 1", n)
		}
	})
}
