package rpc

import (
	"context"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// UpdateDocument applies an admin's UpdateDocument at the document's owner,
// here or through the owner's ClusterService, and returns the owner's
// summary of the document after it (root included) with the schema key it
// is bound to.
func (a *AdminOwners) UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u admin.DocumentUpdate) (*api.DocumentSummary, error) {
	s := a.s
	rt, owner, err := s.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	if owner != nil {
		resp, err := owner.UpdateDocumentByAdmin(ctx, connect.NewRequest(&clusterv1.UpdateDocumentByAdminRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key,
			Root: u.Root, SetSchema: u.SetSchema, SchemaKey: u.SchemaKey,
		}))
		if err != nil {
			return nil, s.remoteFailed(ctx, rt, err)
		}
		if resp.Msg.GetDocument() == nil {
			return nil, newError(connect.CodeUnavailable, CodeUnavailable, errNoSummary)
		}
		return resp.Msg.GetDocument(), nil
	}
	bu := backend.DocumentUpdate{SetSchema: u.SetSchema, SchemaKey: u.SchemaKey}
	if u.Root != "" {
		if bu.Root, err = yson.ParseObject(u.Root); err != nil {
			return nil, invalidArgument(err)
		}
	}
	sum, err := s.updateHere(ctx, rt, doc.ID, bu)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	return sum, nil
}

// updateHere applies an update to a document this node serves on rt and
// returns its summary afterwards, root and schema key included.
func (s *Service) updateHere(ctx context.Context, rt routing.Route, docID string, u backend.DocumentUpdate) (*api.DocumentSummary, error) {
	key, err := s.backend.UpdateDocumentByAdmin(ctx, rt.Project, rt.Epoch, docID, u)
	if err != nil {
		return nil, err
	}
	st, err := s.localSummary(ctx, rt, docID, true, false)
	if err != nil {
		return nil, err
	}
	st.Summary.SchemaKey = key
	return st.Summary, nil
}
