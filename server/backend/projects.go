package backend

import (
	"context"
	"errors"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// ErrTooManyAttachments: the document has as many clients attached as its
// project allows.
var ErrTooManyAttachments = errors.New("too many clients attached to the document")

// ErrTooManySubscribers: the document has as many clients watching as its
// project allows.
var ErrTooManySubscribers = errors.New("too many clients watching the document")

// project returns the settings of the call's project, or project.ErrMissing.
func (b *Backend) project(ctx context.Context) (*database.ProjectInfo, error) {
	return project.Of(ctx)
}

// DocumentSizeLimit returns the size bound of the call's project's documents,
// as clients are told on attach: the project's own when it sets one, else
// Config.MaxSizePerDocument (0: no bound).
func (b *Backend) DocumentSizeLimit(ctx context.Context) (int, error) {
	p, err := b.project(ctx)
	if err != nil {
		return 0, err
	}
	return b.sizeLimit(p), nil
}

func (b *Backend) sizeLimit(p *database.ProjectInfo) int {
	if p.MaxSizePerDocument > 0 {
		return p.MaxSizePerDocument
	}
	return b.maxDocSize
}
