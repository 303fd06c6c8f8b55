package adminowner

import (
	"context"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// UpdateDocument applies an admin's UpdateDocument at the document's owner,
// here or through the owner's ClusterService, and returns the owner's
// summary of the document after it (root included) with the schema key it
// is bound to.
func (a *Owners) UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u admin.DocumentUpdate) (*api.DocumentSummary, error) {
	rt, owner, err := a.routeAdmin(ctx, p, doc.Key)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	if owner != nil {
		resp, err := owner.UpdateDocumentByAdmin(ctx, connect.NewRequest(&clusterv1.UpdateDocumentByAdminRequest{
			ProjectId: p.ID, DocumentId: doc.ID, DocumentKey: doc.Key,
			Root: u.Root, SetSchema: u.SetSchema, SchemaKey: u.SchemaKey,
		}))
		if err != nil {
			return nil, a.remoteFailed(ctx, rt, err)
		}
		if resp.Msg.GetDocument() == nil {
			return nil, errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, errNoSummary)
		}
		return resp.Msg.GetDocument(), nil
	}
	bu := backend.DocumentUpdate{SetSchema: u.SetSchema, SchemaKey: u.SchemaKey}
	if u.Root != "" {
		if bu.Root, err = yson.ParseObject(u.Root); err != nil {
			return nil, errinfo.InvalidArgument(err)
		}
	}
	return a.UpdateHere(ctx, rt.Project, rt.Epoch, doc.ID, bu)
}

// UpdateHere applies an update to a document of project p this node owns
// under epoch and returns its summary afterwards, root and schema key
// included.
func (a *Owners) UpdateHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, u backend.DocumentUpdate) (*api.DocumentSummary, error) {
	key, err := a.backend.UpdateDocumentByAdmin(ctx, p, epoch, docID, u)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	st, err := a.localSummary(ctx, p, epoch, docID, true, false)
	if err != nil {
		return nil, a.ownerError(ctx, err)
	}
	st.Summary.SchemaKey = key
	return st.Summary, nil
}
