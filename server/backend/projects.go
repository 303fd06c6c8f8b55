package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// DefaultProjectCacheTTL is how long the backend keeps the default
// project's settings for calls that carry no project before reading them
// again, by default: the RPC layer's cache of projects has the same. An
// update made through another node's admin API reaches this node within it.
const DefaultProjectCacheTTL = project.DefaultCacheTTL

// ErrTooManyAttachments: the document has as many clients attached as its
// project allows.
var ErrTooManyAttachments = errors.New("too many clients attached to the document")

// ErrTooManySubscribers: the document has as many clients watching as its
// project allows.
var ErrTooManySubscribers = errors.New("too many clients watching the document")

// defaultProject caches the default project's settings for the calls whose
// context names no project (no API key, internal calls): reading them costs
// an atomic load until the copy is older than the TTL.
type defaultProject struct {
	db  database.Database
	ttl time.Duration
	now func() time.Time

	cached atomic.Pointer[cachedProject]
	// reload serialises the reads of an expired copy.
	reload sync.Mutex
}

type cachedProject struct {
	info    *database.ProjectInfo
	expires time.Time
}

// get returns the cached settings, reading them again once they expired. A
// missing default project (a database the admin service never set up) has
// no limits. A failed read keeps the previous copy when there is one.
func (d *defaultProject) get(ctx context.Context) (*database.ProjectInfo, error) {
	if c := d.cached.Load(); c != nil && d.now().Before(c.expires) {
		return c.info, nil
	}
	d.reload.Lock()
	defer d.reload.Unlock()
	now := d.now()
	old := d.cached.Load()
	if old != nil && now.Before(old.expires) {
		return old.info, nil // another caller read it meanwhile
	}
	info, err := d.db.FindProjectByID(ctx, database.DefaultProjectID)
	switch {
	case errors.Is(err, database.ErrProjectNotFound):
		info = &database.ProjectInfo{ID: database.DefaultProjectID, Name: database.DefaultProjectName}
	case err != nil && old != nil:
		return old.info, nil
	case err != nil:
		return nil, fmt.Errorf("load the default project: %w", err)
	}
	d.cached.Store(&cachedProject{info: info, expires: now.Add(d.ttl)})
	return info, nil
}

// set replaces the cached settings with p's when p is the default project.
func (d *defaultProject) set(p *database.ProjectInfo) {
	if p == nil || p.ID != database.DefaultProjectID {
		return
	}
	c := *p
	d.cached.Store(&cachedProject{info: &c, expires: d.now().Add(d.ttl)})
}

// project returns the settings of the call's project: the one the RPC layer
// put in the context, or the default project's.
func (b *Backend) project(ctx context.Context) (*database.ProjectInfo, error) {
	if p := project.FromContext(ctx); p != nil {
		return p, nil
	}
	return b.defaults.get(ctx)
}

// ProjectUpdated tells the backend that a project's settings changed on
// this node (the admin API's UpdateProject), so its documents follow them at
// once instead of after the cache TTL.
func (b *Backend) ProjectUpdated(p *database.ProjectInfo) { b.defaults.set(p) }

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
