package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// UpdateDocument applies an admin's UpdateDocument at the document's owner
// and returns the owner's summary of the document after it (root included)
// with the schema key it is bound to. A document owned by another node is
// refused with unimplemented: the node-to-node protocol has no call for it
// yet.
func (a *AdminOwners) UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u backend.DocumentUpdate) (*api.DocumentSummary, error) {
	s := a.s
	ctx = project.NewContext(ctx, p)
	rt, owner, err := s.routeAdmin(ctx, doc.Key)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	if owner != nil {
		return nil, newError(connect.CodeUnimplemented, CodeUnimplemented,
			errors.New("UpdateDocument of a document another node owns is not served yet"))
	}
	key, err := s.backend.UpdateDocumentByAdmin(ctx, rt.Epoch, doc.ID, u)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	st, err := s.localSummary(ctx, rt.Epoch, doc.ID, true, false)
	if err != nil {
		return nil, s.ownerError(ctx, err)
	}
	st.Summary.SchemaKey = key
	return st.Summary, nil
}
