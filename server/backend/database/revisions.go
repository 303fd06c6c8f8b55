package database

import (
	"context"
	"errors"
	"time"
)

// ErrRevisionNotFound: the document has no revision with the given ID (a
// revision of another document or project counts as none).
var ErrRevisionNotFound = errors.New("revision not found")

// Revision is a named copy of a document's content at one server_seq, kept
// so that the document can be brought back to it. It holds the content only,
// not the history: restoring it is a new change that replaces the root.
type Revision struct {
	// ID is 24 lowercase hex characters; IDs rise in creation order.
	ID        string
	ProjectID string
	DocID     string
	// Label and Description are the creator's words for it.
	Label       string
	Description string
	// Snapshot is the content in upstream Yorkie's YSON form, what clients
	// read (empty in a list).
	Snapshot []byte
	// Content is the root element at ServerSeq, a binary yorkie.v1.JSONElement
	// with its tickets: what a restore builds its change from (empty in a
	// list). Implementations compress it at rest.
	Content []byte
	// ServerSeq is the last change of the log the content includes.
	ServerSeq int64
	// CreatedAt is set by the database.
	CreatedAt time.Time
}

// RevisionPaging selects a page of a document's revisions: Offset of them
// skipped, at most PageSize returned (0: all), oldest first when Forward and
// newest first otherwise, as upstream pages them.
type RevisionPaging struct {
	Offset   int
	PageSize int
	Forward  bool
}

// Revisions stores documents' revisions. A revision is written by the
// document's owner, fenced by its owner epoch like the change log.
type Revisions interface {
	// CreateRevision stores r as a new revision of document r.DocID of
	// project r.ProjectID and returns it with its ID and CreatedAt set.
	// ErrDocumentNotFound if the project has no such document, ErrFenced if
	// a higher epoch than epoch claimed it.
	CreateRevision(ctx context.Context, epoch int64, r *Revision) (*Revision, error)
	// ListRevisions returns a page of the document's revisions without
	// their Snapshot and Content; none for an unknown document.
	ListRevisions(ctx context.Context, projectID, docID string, p RevisionPaging) ([]*Revision, error)
	// FindRevision returns the document's revision whole, or
	// ErrRevisionNotFound.
	FindRevision(ctx context.Context, projectID, docID, revisionID string) (*Revision, error)
}
