package memory

import (
	"context"
	"sort"
	"strings"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// liveDocs returns the project's live documents matching keep, in ID order.
func (db *DB) liveDocs(projectID string, keep func(*database.DocInfo) bool) []*database.DocInfo {
	db.mu.RLock()
	ids := make([]string, 0, len(db.liveByKey))
	for name, id := range db.liveByKey {
		if name.project == projectID {
			ids = append(ids, id)
		}
	}
	docs := make([]*doc, 0, len(ids))
	for _, id := range ids {
		if d, ok := db.docs[id]; ok {
			docs = append(docs, d)
		}
	}
	db.mu.RUnlock()
	var out []*database.DocInfo
	for _, d := range docs {
		if info := d.snapshot(); info.RemovedAt.IsZero() && keep(info) {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ListDocuments returns a page of the project's live documents in ID order.
func (db *DB) ListDocuments(ctx context.Context, projectID, afterID string, pageSize int, forward bool) ([]*database.DocInfo, error) {
	if err := db.check(ctx, "list documents"); err != nil {
		return nil, err
	}
	docs := db.liveDocs(projectID, func(info *database.DocInfo) bool {
		switch {
		case afterID == "":
			return true
		case forward:
			return info.ID > afterID
		default:
			return info.ID < afterID
		}
	})
	if !forward {
		for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
			docs[i], docs[j] = docs[j], docs[i]
		}
	}
	return docs[:min(len(docs), max(pageSize, 0))], nil
}

// SearchDocuments returns the project's live documents whose key starts
// with prefix, in key order.
func (db *DB) SearchDocuments(ctx context.Context, projectID, prefix string, limit int) ([]*database.DocInfo, int, error) {
	if err := db.check(ctx, "search documents"); err != nil {
		return nil, 0, err
	}
	docs := db.liveDocs(projectID, func(info *database.DocInfo) bool { return strings.HasPrefix(info.Key, prefix) })
	sort.Slice(docs, func(i, j int) bool { return docs[i].Key < docs[j].Key })
	return docs[:min(len(docs), max(limit, 0))], len(docs), nil
}
