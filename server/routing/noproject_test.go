package routing_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	sessmemory "github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// TestCallWithoutProjectIsNotRouted: a document call or a deactivation that
// names no project (nil, or one without an ID) is refused with
// project.ErrMissing before any owner is looked up, while the same call in
// the default project is routed here, on a route that carries it.
func TestCallWithoutProjectIsNotRouted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	b, err := backend.New(backend.Config{DB: memory.New(), Logger: logger})
	require.NoError(t, err)
	channels := channel.New(channel.Config{Logger: logger})
	defer channels.Close()
	st := sessmemory.New(sessmemory.Config{})
	const addr = "127.0.0.1:9702"
	mgr, err := affinity.New(affinity.Config{Store: st.Client(), AdvertiseAddr: addr, TTL: time.Minute, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, mgr.Start(ctx))
	defer func() { _ = mgr.Stop(context.Background()) }()
	r, err := routing.New(routing.Config{
		Owners: mgr, Peers: routing.NewPeers(routing.PeersConfig{Secret: "secret", Self: addr}),
		Backend: b, Channels: channels, Mode: routing.Forward, Header: routing.DefaultSessionKeyHeader,
		Secret: "secret", Logger: logger, Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)

	for name, none := range map[string]*database.ProjectInfo{"nil": nil, "empty ID": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Route(ctx, routing.DocumentCall{Kind: routing.CallPushPull, Project: none, DocumentKey: "doc"})
			assert.ErrorIs(t, err, project.ErrMissing, "route")
			_, err = r.DetachRemote(ctx, none, "000000000000000000000001")
			assert.ErrorIs(t, err, project.ErrMissing, "detach remote")
		})
	}
	dflt := &database.ProjectInfo{ID: database.DefaultProjectID}
	rt, err := r.Route(ctx, routing.DocumentCall{Kind: routing.CallPushPull, Project: dflt, DocumentKey: "doc"})
	require.NoError(t, err)
	assert.Same(t, dflt, rt.Project, "the route carries the call's project")
	assert.Nil(t, rt.Owner, "the only member serves the call")
}
