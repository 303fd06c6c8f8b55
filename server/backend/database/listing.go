package database

import "context"

// DocumentListing finds a project's live documents for the AdminService:
// pages of them in ID order and the ones whose key starts with a prefix.
// The DocInfos it returns carry ID, ProjectID, Key and CreatedAt only (not
// ServerSeq or Epoch, which cost a lookup each): callers that need the head
// find the document itself.
type DocumentListing interface {
	// ListDocuments returns up to pageSize live documents of the project
	// in ID order: ascending after afterID when forward, else descending
	// before afterID; an empty afterID starts at the first (forward) or
	// last document.
	ListDocuments(ctx context.Context, projectID, afterID string, pageSize int, forward bool) ([]*DocInfo, error)
	// SearchDocuments returns, in key order, up to limit live documents
	// of the project whose key starts with prefix, and how many match in
	// all.
	SearchDocuments(ctx context.Context, projectID, prefix string, limit int) ([]*DocInfo, int, error)
}
