package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/rpc"
)

// adminOwners hands the AdminService's document and channel calls to the
// YorkieService's owner side once Start has built it (with the routing it
// needs); before that they answer unavailable.
type adminOwners struct{ s *Server }

var _ admin.Owners = adminOwners{}

var errNotServing = connect.NewError(connect.CodeUnavailable, errors.New("the node is not serving yet"))

func (a adminOwners) owners() (*rpc.AdminOwners, error) {
	if a.s.service == nil {
		return nil, errNotServing
	}
	return a.s.service.AdminOwners(), nil
}

func (a adminOwners) DocumentSummary(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, root, presences bool) (*admin.OwnerState, error) {
	o, err := a.owners()
	if err != nil {
		return nil, err
	}
	return o.DocumentSummary(ctx, p, doc, root, presences)
}

func (a adminOwners) RemoveDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, force bool) error {
	o, err := a.owners()
	if err != nil {
		return err
	}
	return o.RemoveDocument(ctx, p, doc, force)
}

func (a adminOwners) DocumentAt(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, seq int64) (*document.Document, error) {
	o, err := a.owners()
	if err != nil {
		return nil, err
	}
	return o.DocumentAt(ctx, p, doc, seq)
}

func (a adminOwners) GetChannels(ctx context.Context, p *database.ProjectInfo, keys []string, includeSub bool) ([]*api.ChannelSummary, error) {
	o, err := a.owners()
	if err != nil {
		return nil, err
	}
	return o.GetChannels(ctx, p, keys, includeSub)
}

func (a adminOwners) ListChannels(ctx context.Context, p *database.ProjectInfo, query string, limit int) ([]*api.ChannelSummary, error) {
	o, err := a.owners()
	if err != nil {
		return nil, err
	}
	return o.ListChannels(ctx, p, query, limit)
}

func (a adminOwners) Broadcast(ctx context.Context, p *database.ProjectInfo, key, topic string, payload []byte) error {
	o, err := a.owners()
	if err != nil {
		return err
	}
	return o.Broadcast(ctx, p, key, topic, payload)
}
