package clustersvc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/clustersvc"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

const secretHeader = "X-Test-Cluster-Secret"

// unreached fails the test if the service asks it anything: a refused call
// must be refused before it is routed or served.
type unreached struct {
	clustersvc.Owner
	t *testing.T
}

func (u unreached) Route(context.Context, routing.DocumentCall) (routing.Route, error) {
	u.t.Error("a call without the cluster secret was routed")
	return routing.Route{}, errors.New("unreached")
}

func (u unreached) SessionKeyHeader() string { return "x-shard-key" }

func newService(t *testing.T, drain func(context.Context) (int, error)) clusterv1connect.ClusterServiceClient {
	t.Helper()
	b, err := backend.New(backend.Config{DB: memory.New()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	u := unreached{t: t}
	svc, err := clustersvc.New(clustersvc.Config{
		Backend: b, Router: u, Owner: u, Drain: drain,
		Authentic: func(h http.Header) bool { return h.Get(secretHeader) == "s3cret" },
		FindProject: func(context.Context, string) (*database.ProjectInfo, error) {
			t.Error("a call without the cluster secret looked up its project")
			return nil, database.ErrProjectNotFound
		},
	})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(svc.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return clusterv1connect.NewClusterServiceClient(srv.Client(), srv.URL)
}

// TestHandlerRefusesCallsWithoutTheSecret: the handler checks the cluster
// secret itself, so mounted without the request bounds (which check it
// first on the RPC port) it still serves no one else.
func TestHandlerRefusesCallsWithoutTheSecret(t *testing.T) {
	var drained atomic.Bool
	client := newService(t, func(context.Context) (int, error) { drained.Store(true); return 0, nil })
	ctx := context.Background()
	wantRefused := func(t *testing.T, err error) {
		t.Helper()
		var ce *connect.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, connect.CodePermissionDenied, ce.Code())
		require.Equal(t, errinfo.CodePermissionDenied, errinfo.Name(ce))
	}

	_, err := client.DetachClientDocument(ctx, connect.NewRequest(&clusterv1.DetachClientDocumentRequest{
		ClientId: "0123456789abcdef01234567", DocumentId: "0123456789abcdef01234567", DocumentKey: "doc",
	}))
	wantRefused(t, err)
	_, err = client.RemoveDocumentByAdmin(ctx, connect.NewRequest(&clusterv1.RemoveDocumentByAdminRequest{
		ProjectId: database.DefaultProjectID, DocumentId: "0123456789abcdef01234567", DocumentKey: "doc", Force: true,
	}))
	wantRefused(t, err)
	_, err = client.Drain(ctx, connect.NewRequest(&clusterv1.DrainRequest{}))
	wantRefused(t, err)
	require.False(t, drained.Load(), "a Drain without the cluster secret drained the node")

	// With the secret the same call goes through.
	req := connect.NewRequest(&clusterv1.DrainRequest{})
	req.Header().Set(secretHeader, "s3cret")
	_, err = client.Drain(ctx, req)
	require.NoError(t, err)
	require.True(t, drained.Load())
}

// TestNewNeedsEveryDependency: a Config without a required part is refused.
func TestNewNeedsEveryDependency(t *testing.T) {
	b, err := backend.New(backend.Config{DB: memory.New()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	u := unreached{t: t}
	full := clustersvc.Config{
		Backend: b, Router: u, Owner: u,
		Authentic:   func(http.Header) bool { return false },
		FindProject: func(context.Context, string) (*database.ProjectInfo, error) { return nil, nil },
	}
	_, err = clustersvc.New(full)
	require.NoError(t, err)
	for name, drop := range map[string]func(*clustersvc.Config){
		"Backend":     func(c *clustersvc.Config) { c.Backend = nil },
		"Router":      func(c *clustersvc.Config) { c.Router = nil },
		"Owner":       func(c *clustersvc.Config) { c.Owner = nil },
		"Authentic":   func(c *clustersvc.Config) { c.Authentic = nil },
		"FindProject": func(c *clustersvc.Config) { c.FindProject = nil },
	} {
		cfg := full
		drop(&cfg)
		_, err := clustersvc.New(cfg)
		require.Error(t, err, "New without %s", name)
	}
}
