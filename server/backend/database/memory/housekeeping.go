package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// TouchClients records at as the last activity of the activated clients
// among clientIDs whose recorded one is earlier.
func (db *DB) TouchClients(ctx context.Context, clientIDs []string, at time.Time) error {
	if err := db.check(ctx, "touch clients"); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, id := range clientIDs {
		if c, ok := db.clients[id]; ok && c.Status == database.ClientActivated && c.UpdatedAt.Before(at) {
			c.UpdatedAt = at
		}
	}
	return nil
}

// FindInactiveClients returns, in ID order, up to limit activated clients
// with an ID above afterID whose last activity is before before. It scans
// every client: the memory database serves one node, and the scan runs once
// per housekeeping interval.
func (db *DB) FindInactiveClients(ctx context.Context, before time.Time, afterID string, limit int) ([]*database.ClientInfo, error) {
	if err := db.check(ctx, "find inactive clients"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	db.mu.RLock()
	var out []*database.ClientInfo
	for id, c := range db.clients {
		if id > afterID && c.Status == database.ClientActivated && c.UpdatedAt.Before(before) {
			out = append(out, cloneClient(c))
		}
	}
	db.mu.RUnlock()
	slices.SortFunc(out, func(a, b *database.ClientInfo) int { return strings.Compare(a.ID, b.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
