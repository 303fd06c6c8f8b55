package memory

import (
	"context"
	"fmt"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// FindDocumentByKey returns the live document with the key or the newest
// removed one. Removed documents are not indexed by key, so finding one scans
// every document: the call serves operators, not clients.
func (db *DB) FindDocumentByKey(ctx context.Context, projectID, key string) (*database.DocInfo, error) {
	if err := db.check(ctx, "find document by key"); err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if id, ok := db.liveByKey[docName{projectID, key}]; ok {
		return db.docs[id].snapshot(), nil
	}
	var newest *database.DocInfo
	for _, d := range db.docs {
		info := d.snapshot()
		if info.Key != key || info.ProjectID != projectID {
			continue
		}
		if newest == nil || info.CreatedAt.After(newest.CreatedAt) {
			newest = info
		}
	}
	if newest == nil {
		return nil, fmt.Errorf("find document by key %q: %w", key, database.ErrDocumentNotFound)
	}
	return newest, nil
}
