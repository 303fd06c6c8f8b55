package server

import (
	"context"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// UpdateDocument serves the AdminService's UpdateDocument at the owner.
func (a adminOwners) UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u admin.DocumentUpdate) (*api.DocumentSummary, error) {
	o, err := a.owners()
	if err != nil {
		return nil, err
	}
	return o.UpdateDocument(ctx, p, doc, u)
}
