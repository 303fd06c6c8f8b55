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
			wantError(t, activate(keyedClient(t, srv, p, "not-a-key")), connect.CodeUnauthenticated, rpc.CodeUnauthenticated)

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
			wantError(t, err, connect.CodeUnauthenticated, rpc.CodeUnauthenticated)
		})
	}
}

func TestProjectDefaultOff(t *testing.T) {
	forEachProtocolWith(t, func(t *testing.T, srv *server.Server, p servertest.Protocol, keyA, _ string) {
		ctx := wire.Context(t)
		_, err := keyedClient(t, srv, p, "").ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"}))
		wantError(t, err, connect.CodeUnauthenticated, rpc.CodeUnauthenticated)
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
