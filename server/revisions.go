package server

import (
	"context"

	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// revisionRestorer restores revisions for the AdminService through the RPC
// service, which routes each to the document's owner.
type revisionRestorer struct{ s *Server }

var _ admin.RevisionRestorer = revisionRestorer{}

// RestoreRevisionAsOperator implements admin.RevisionRestorer.
func (r revisionRestorer) RestoreRevisionAsOperator(ctx context.Context, p *database.ProjectInfo, docID, key, revisionID string) error {
	if r.s.service == nil {
		return errNotServing
	}
	return r.s.service.RestoreRevisionAsOperator(ctx, p, docID, key, revisionID)
}
