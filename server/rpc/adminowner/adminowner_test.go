package adminowner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/adminowner"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// elsewhere routes every call to an owner at addr and records what the
// owners' side reports as failed.
type elsewhere struct {
	addr   string
	owner  v1connect.YorkieServiceClient
	failed []routing.Route
}

func (e *elsewhere) Route(_ context.Context, call routing.DocumentCall) (routing.Route, error) {
	return routing.Route{Project: call.Project, Binding: "binding-of-" + call.DocumentKey, Owner: e.owner, Addr: e.addr}, nil
}

func (e *elsewhere) RelayFailed(_ context.Context, rt routing.Route, _ error) {
	e.failed = append(e.failed, rt)
}

// members reaches every member at its address over real HTTP.
type members struct{}

func (members) ClusterOf(addr string) clusterv1connect.ClusterServiceClient {
	return clusterv1connect.NewClusterServiceClient(http.DefaultClient, addr)
}

func (members) Others() []clusterv1connect.ClusterServiceClient { return nil }

func newBackend(t *testing.T) *backend.Backend {
	t.Helper()
	b, err := backend.New(backend.Config{DB: memory.New()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b
}

func TestNewNeedsEveryDependency(t *testing.T) {
	full := adminowner.Config{Backend: newBackend(t), Channels: channel.New(channel.Config{}), Router: &elsewhere{}}
	_, err := adminowner.New(full)
	require.NoError(t, err)
	for name, drop := range map[string]func(*adminowner.Config){
		"Backend":  func(c *adminowner.Config) { c.Backend = nil },
		"Channels": func(c *adminowner.Config) { c.Channels = nil },
		"Router":   func(c *adminowner.Config) { c.Router = nil },
	} {
		cfg := full
		drop(&cfg)
		_, err := adminowner.New(cfg)
		assert.ErrorContains(t, err, name, "without %s", name)
	}
}

// TestUnreachableOwnerIsForgotten: an admin call whose owner cannot be
// reached answers unavailable (which callers retry) and tells the router
// to stop believing in that owner, for the binding the call was routed by.
func TestUnreachableOwnerIsForgotten(t *testing.T) {
	gone := httptest.NewServer(nil)
	addr := gone.URL
	gone.Close() // nothing listens there any more
	router := &elsewhere{addr: addr, owner: v1connect.NewYorkieServiceClient(http.DefaultClient, addr)}
	owners, err := adminowner.New(adminowner.Config{
		Backend: newBackend(t), Channels: channel.New(channel.Config{}), Router: router, Cluster: members{},
	})
	require.NoError(t, err)

	p := &database.ProjectInfo{ID: database.DefaultProjectID}
	doc := &database.DocInfo{ID: "0123456789abcdef01234567", Key: "doc"}
	err = owners.RemoveDocument(context.Background(), p, doc, false)
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, connect.CodeUnavailable, ce.Code())
	assert.Equal(t, errinfo.CodeUnavailable, errinfo.Name(ce))
	require.Len(t, router.failed, 1)
	assert.Equal(t, "binding-of-doc", router.failed[0].Binding)
}

// TestOwnerElsewhereWithoutCluster: a route naming another owner, with no
// cluster to reach it through, is an error, not a call served here.
func TestOwnerElsewhereWithoutCluster(t *testing.T) {
	router := &elsewhere{addr: "http://127.0.0.1:1", owner: v1connect.NewYorkieServiceClient(http.DefaultClient, "http://127.0.0.1:1")}
	owners, err := adminowner.New(adminowner.Config{Backend: newBackend(t), Channels: channel.New(channel.Config{}), Router: router})
	require.NoError(t, err)
	_, err = owners.DocumentSummary(context.Background(), &database.ProjectInfo{ID: database.DefaultProjectID},
		&database.DocInfo{ID: "0123456789abcdef01234567", Key: "doc"}, true, false)
	var ce *connect.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, connect.CodeInternal, ce.Code())
	assert.Empty(t, router.failed)
}
