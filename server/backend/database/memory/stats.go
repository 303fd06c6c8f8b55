package memory

import (
	"context"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// ProjectActivity implements database.Stats.
func (db *DB) ProjectActivity(ctx context.Context, projectID string, from, to time.Time) (*database.ProjectActivity, error) {
	if err := db.check(ctx, "project activity"); err != nil {
		return nil, err
	}
	in := func(t time.Time) bool { return !t.Before(from) && t.Before(to) }
	out := &database.ProjectActivity{}
	db.mu.RLock()
	var docs []*doc
	for _, c := range db.clients {
		if c.ProjectID != projectID {
			continue
		}
		if c.Status == database.ClientActivated {
			out.Clients++
		}
		if in(c.UpdatedAt) && len(out.ActiveClients) < database.MaxActivityRecords {
			out.ActiveClients = append(out.ActiveClients, database.Activity{Key: c.Key, At: c.UpdatedAt})
		}
	}
	for _, d := range db.docs {
		docs = append(docs, d)
	}
	db.mu.RUnlock()
	for _, d := range docs {
		d.mu.RLock()
		if d.info.ProjectID == projectID {
			if d.info.RemovedAt.IsZero() {
				out.Documents++
			}
			var last time.Time
			for i := range d.attachments.list {
				if at := d.attachments.list[i].updatedAt; in(at) && at.After(last) {
					last = at
				}
			}
			if !last.IsZero() && len(out.ActiveDocuments) < database.MaxActivityRecords {
				out.ActiveDocuments = append(out.ActiveDocuments, database.Activity{Key: d.info.ID, At: last})
			}
		}
		d.mu.RUnlock()
	}
	return out, nil
}
