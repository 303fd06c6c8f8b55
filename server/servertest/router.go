package servertest

import (
	"context"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
)

// OwnerRouter stages routing for a server that joins no cluster
// (server.Config.Router): the node serves every call as the owner holding
// the epoch, so tests can run two nodes that both believe they own a
// document, or measure a node without the cluster layer.
type OwnerRouter int64

// Route serves the call here, in its project, with the router's epoch.
func (r OwnerRouter) Route(_ context.Context, call routing.DocumentCall) (routing.Route, error) {
	return routing.Route{Project: call.Project, Epoch: int64(r)}, nil
}

// RelayFailed does nothing: nothing is relayed.
func (OwnerRouter) RelayFailed(context.Context, routing.Route, error) {}

// DetachRemote detaches nothing elsewhere; the documents served here are
// detached with the epoch 0.
func (OwnerRouter) DetachRemote(context.Context, *database.ProjectInfo, string) (map[string]int64, error) {
	return nil, nil
}

// SessionKeyHeader names the default session key header.
func (OwnerRouter) SessionKeyHeader() string { return routing.DefaultSessionKeyHeader }
