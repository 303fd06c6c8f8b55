package project

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Sentinel errors of Resolve; the RPC layer answers both with
// unauthenticated.
var (
	// ErrAPIKeyRequired: the call carries no API key and the default project
	// is turned off.
	ErrAPIKeyRequired = errors.New("api key is required")
	// ErrUnknownAPIKey: no project has the call's API key.
	ErrUnknownAPIKey = errors.New("unknown api key")
)

// Defaults of ResolverConfig.
const (
	// DefaultCacheTTL is how long a resolved project is used before it is
	// read again: an UpdateProject reaches every node within it.
	DefaultCacheTTL = 10 * time.Second
	// DefaultCacheSize bounds the projects one node keeps resolved.
	DefaultCacheSize = 1024
)

// ResolverConfig configures a Resolver.
type ResolverConfig struct {
	// DB is where projects are looked up. Required.
	DB database.Accounts
	// UseDefaultProject lets calls without an API key use the default
	// project; false refuses them with ErrAPIKeyRequired.
	UseDefaultProject bool
	// CacheTTL is how long a looked-up project is reused (default
	// DefaultCacheTTL; negative: every call reads the database).
	CacheTTL time.Duration
	// CacheSize bounds the cached projects (default DefaultCacheSize).
	CacheSize int
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
}

// Resolver finds the project of a call from its API key. Projects change
// rarely and every call needs one, so they are cached for a short TTL rather
// than invalidated: a node learns of an update made on any node, through the
// shared database, once its entry expires.
type Resolver struct {
	cfg ResolverConfig

	mu      sync.RWMutex
	entries map[string]cacheEntry // by public key, "" for the default project
}

type cacheEntry struct {
	p       *database.ProjectInfo
	expires time.Time
}

// NewResolver returns a Resolver for cfg.
func NewResolver(cfg ResolverConfig) (*Resolver, error) {
	if cfg.DB == nil {
		return nil, errors.New("project: ResolverConfig.DB is required")
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Resolver{cfg: cfg, entries: make(map[string]cacheEntry)}, nil
}

// Resolve returns the project whose public key is apiKey, the default project
// for an empty key (ErrAPIKeyRequired when it is turned off), ErrUnknownAPIKey
// when no project has the key. The result is shared: callers must not change
// it.
func (r *Resolver) Resolve(ctx context.Context, apiKey string) (*database.ProjectInfo, error) {
	if apiKey == "" && !r.cfg.UseDefaultProject {
		return nil, ErrAPIKeyRequired
	}
	p, _, err := r.lookup(ctx, apiKey)
	if errors.Is(err, database.ErrProjectNotFound) {
		if apiKey == "" {
			return nil, fmt.Errorf("default project: %w", err)
		}
		return nil, ErrUnknownAPIKey
	}
	if err != nil {
		return nil, fmt.Errorf("find project by api key: %w", err)
	}
	return p, nil
}

// Default returns the default project's settings, whether or not calls
// without a key may use it: a call whose context names no project (an
// internal one) takes them. A database without a default project (the admin
// service never set one up) gives one with no limits, and a failed read the
// previous copy when there is one.
func (r *Resolver) Default(ctx context.Context) (*database.ProjectInfo, error) {
	p, old, err := r.lookup(ctx, "")
	switch {
	case errors.Is(err, database.ErrProjectNotFound):
		return &database.ProjectInfo{ID: database.DefaultProjectID, Name: database.DefaultProjectName, AutoRevisionEnabled: true}, nil
	case err != nil && old != nil:
		return old, nil
	case err != nil:
		return nil, fmt.Errorf("load the default project: %w", err)
	}
	return p, nil
}

// lookup returns the project of apiKey ("" for the default project) from
// the cache or, once its entry expired, from the database; old is the
// expired copy, if any.
func (r *Resolver) lookup(ctx context.Context, apiKey string) (p, old *database.ProjectInfo, err error) {
	now := r.cfg.Now()
	r.mu.RLock()
	e, ok := r.entries[apiKey]
	r.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.p, nil, nil
	}
	if ok {
		old = e.p
	}
	if apiKey == "" {
		p, err = r.cfg.DB.FindProjectByID(ctx, database.DefaultProjectID)
	} else {
		p, err = r.cfg.DB.FindProjectByPublicKey(ctx, apiKey)
	}
	if err != nil {
		// Unknown keys are not cached: a client cannot fill the cache.
		return nil, old, err
	}
	if r.cfg.CacheTTL > 0 {
		r.mu.Lock()
		if len(r.entries) >= r.cfg.CacheSize {
			r.evictLocked(now)
		}
		r.entries[apiKey] = cacheEntry{p: p, expires: now.Add(r.cfg.CacheTTL)}
		r.mu.Unlock()
	}
	return p, nil, nil
}

// evictLocked makes room: expired entries go, and if none had expired, all
// go (the cache refills from the database within one TTL).
func (r *Resolver) evictLocked(now time.Time) {
	for k, e := range r.entries {
		if !now.Before(e.expires) {
			delete(r.entries, k)
		}
	}
	if len(r.entries) >= r.cfg.CacheSize {
		clear(r.entries)
	}
}

// Updated replaces the cached copies of p (by its ID) with p, so that an
// UpdateProject served by this node applies to its next calls at once;
// other nodes see it when their entries expire.
func (r *Resolver) Updated(p *database.ProjectInfo) {
	if p == nil {
		return
	}
	c := *p
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, e := range r.entries {
		switch {
		case e.p.ID != c.ID:
		case k != "" && k != c.PublicKey:
			// The keys were rotated: the old key names no project now.
			delete(r.entries, k)
		default:
			r.entries[k] = cacheEntry{p: &c, expires: e.expires}
		}
	}
}
