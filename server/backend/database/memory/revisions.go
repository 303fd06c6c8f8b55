package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// revisionStore holds the documents' revisions, apart from the documents.
// Its zero value is ready to use.
//
// Lock order: doc.mu before revisionStore.mu.
type revisionStore struct {
	mu sync.RWMutex
	// byDoc holds each document's revisions in creation (and so ID) order.
	byDoc map[string][]*database.Revision
}

func cloneRevision(r *database.Revision, whole bool) *database.Revision {
	c := *r
	if whole {
		c.Snapshot = slices.Clone(r.Snapshot)
		c.Content = slices.Clone(r.Content)
	} else {
		c.Snapshot, c.Content = nil, nil
	}
	return &c
}

// CreateRevision implements database.Revisions.
func (db *DB) CreateRevision(ctx context.Context, epoch int64, r *database.Revision) (*database.Revision, error) {
	if err := db.check(ctx, "create revision"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(r.DocID)
	if err != nil {
		return nil, fmt.Errorf("create revision: %w", err)
	}
	stored := cloneRevision(r, true)
	stored.CreatedAt = time.Now().UTC()
	// Holding the document's lock orders the fence check with claims.
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.info.ProjectID != r.ProjectID {
		return nil, fmt.Errorf("create revision: document %q of project %s: %w", r.DocID, r.ProjectID, database.ErrDocumentNotFound)
	}
	if err := d.fenced(epoch); err != nil {
		return nil, fmt.Errorf("create revision: %w", err)
	}
	s := &db.revs
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byDoc == nil {
		s.byDoc = make(map[string][]*database.Revision)
	}
	// Taking the ID under the lock keeps the order of creation the order
	// of the IDs.
	stored.ID = db.clientIDs.Next()
	s.byDoc[r.DocID] = append(s.byDoc[r.DocID], stored)
	return cloneRevision(stored, true), nil
}

// ListRevisions implements database.Revisions.
func (db *DB) ListRevisions(ctx context.Context, projectID, docID string, p database.RevisionPaging) ([]*database.Revision, error) {
	if err := db.check(ctx, "list revisions"); err != nil {
		return nil, err
	}
	s := &db.revs
	s.mu.RLock()
	defer s.mu.RUnlock()
	all := s.byDoc[docID]
	n := len(all)
	start := min(max(p.Offset, 0), n)
	end := n
	if p.PageSize > 0 {
		end = min(start+p.PageSize, n)
	}
	out := make([]*database.Revision, 0, end-start)
	for i := start; i < end; i++ {
		r := all[i]
		if !p.Forward {
			r = all[n-1-i]
		}
		if r.ProjectID != projectID {
			return []*database.Revision{}, nil
		}
		out = append(out, cloneRevision(r, false))
	}
	return out, nil
}

// FindRevision implements database.Revisions.
func (db *DB) FindRevision(ctx context.Context, projectID, docID, revisionID string) (*database.Revision, error) {
	if err := db.check(ctx, "find revision"); err != nil {
		return nil, err
	}
	s := &db.revs
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.byDoc[docID] {
		if r.ID == revisionID && r.ProjectID == projectID {
			return cloneRevision(r, true), nil
		}
	}
	return nil, fmt.Errorf("revision %q of document %q: %w", revisionID, docID, database.ErrRevisionNotFound)
}
