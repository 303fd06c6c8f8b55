package project

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// DefaultRefresh is how long Defaults keeps the default project it read
// before reading it again, so that its webhook settings, changed through the
// admin API on any node, reach every node within this time.
const DefaultRefresh = 5 * time.Second

// Defaults gives the project of a call: the one in its context, or the
// default project for calls that carry none. It reads the default project
// from the database once per refresh period, never once per call.
type Defaults struct {
	db      database.Accounts
	refresh time.Duration
	now     func() time.Time

	cached atomic.Pointer[cachedProject]
	mu     sync.Mutex // one reader of the database at a time
}

type cachedProject struct {
	p       *database.ProjectInfo
	expires time.Time
}

// NewDefaults returns a Defaults reading from db; refresh <= 0 means
// DefaultRefresh.
func NewDefaults(db database.Accounts, refresh time.Duration) *Defaults {
	if refresh <= 0 {
		refresh = DefaultRefresh
	}
	return &Defaults{db: db, refresh: refresh, now: time.Now}
}

// Of returns the project of ctx, or the default project when ctx carries
// none. The project returned must not be modified.
func (d *Defaults) Of(ctx context.Context) (*database.ProjectInfo, error) {
	if p := FromContext(ctx); p != nil {
		return p, nil
	}
	if c := d.cached.Load(); c != nil && d.now().Before(c.expires) {
		return c.p, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.cached.Load(); c != nil && d.now().Before(c.expires) {
		return c.p, nil // read by the call we waited for
	}
	p, err := d.db.FindProjectByID(ctx, database.DefaultProjectID)
	if errors.Is(err, database.ErrProjectNotFound) {
		// Not created (yet): a project without webhooks or limits.
		p, err = &database.ProjectInfo{ID: database.DefaultProjectID, Name: database.DefaultProjectName}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the default project: %w", err)
	}
	d.cached.Store(&cachedProject{p: p, expires: d.now().Add(d.refresh)})
	return p, nil
}
