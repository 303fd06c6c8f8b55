package backend

import (
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

// projectID returns the ID of p, the project a call acts in, or
// project.ErrMissing when the call names none: no call falls back to the
// default project.
func projectID(p *database.ProjectInfo) (string, error) {
	if p == nil || p.ID == "" {
		return "", project.ErrMissing
	}
	return p.ID, nil
}

// DocumentSizeLimit returns the size bound of project p's documents, as
// clients are told on attach: the project's own when it sets one, else
// Config.MaxSizePerDocument (0: no bound).
func (b *Backend) DocumentSizeLimit(p *database.ProjectInfo) (int, error) {
	if _, err := projectID(p); err != nil {
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
