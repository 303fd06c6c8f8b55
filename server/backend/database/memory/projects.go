package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// accountStore keeps users, projects and secrets under one lock of their
// own: admin calls are rare and must not contend with document calls.
type accountStore struct {
	mu       sync.Mutex
	users    map[string]*database.UserInfo    // by username
	projects map[string]*database.ProjectInfo // by ID, in creation order of IDs
	secrets  map[string]string
}

// init makes the maps on first use, so the zero value is ready; the caller
// holds mu.
func (s *accountStore) init() {
	if s.users == nil {
		s.users = make(map[string]*database.UserInfo)
		s.projects = make(map[string]*database.ProjectInfo)
		s.secrets = make(map[string]string)
	}
}

func cloneProject(p *database.ProjectInfo) *database.ProjectInfo {
	c := *p
	c.AuthWebhookMethods = slices.Clone(p.AuthWebhookMethods)
	c.EventWebhookEvents = slices.Clone(p.EventWebhookEvents)
	c.AllowedOrigins = slices.Clone(p.AllowedOrigins)
	return &c
}

// CreateUser implements database.Accounts.
func (db *DB) CreateUser(ctx context.Context, username, hashedPassword string) (*database.UserInfo, error) {
	if err := db.check(ctx, "create user"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if _, ok := s.users[username]; ok {
		return nil, fmt.Errorf("create user %q: %w", username, database.ErrUserAlreadyExists)
	}
	u := &database.UserInfo{ID: db.clientIDs.Next(), Username: username, HashedPassword: hashedPassword, CreatedAt: time.Now().UTC()}
	s.users[username] = u
	c := *u
	return &c, nil
}

// FindUserByName implements database.Accounts.
func (db *DB) FindUserByName(ctx context.Context, username string) (*database.UserInfo, error) {
	if err := db.check(ctx, "find user"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	u, ok := s.users[username]
	if !ok {
		return nil, fmt.Errorf("find user %q: %w", username, database.ErrUserNotFound)
	}
	c := *u
	return &c, nil
}

// CreateProject implements database.Accounts.
func (db *DB) CreateProject(ctx context.Context, owner, name string) (*database.ProjectInfo, error) {
	if err := db.check(ctx, "create project"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	p, err := s.create(db.clientIDs.Next(), owner, name)
	if err != nil {
		return nil, fmt.Errorf("create project %q: %w", name, err)
	}
	return cloneProject(p), nil
}

// create stores a new project; the caller holds mu.
func (s *accountStore) create(id, owner, name string) (*database.ProjectInfo, error) {
	if s.byName(owner, name) != nil {
		return nil, database.ErrProjectAlreadyExists
	}
	now := time.Now().UTC()
	p := &database.ProjectInfo{
		ID: id, Name: name, Owner: owner,
		PublicKey: database.NewProjectKey(), SecretKey: database.NewProjectKey(),
		AutoRevisionEnabled: true,
		CreatedAt:           now, UpdatedAt: now,
	}
	s.projects[id] = p
	return p, nil
}

// byName returns the owner's project with the name, or nil; the caller
// holds mu.
func (s *accountStore) byName(owner, name string) *database.ProjectInfo {
	for _, p := range s.projects {
		if p.Owner == owner && p.Name == name {
			return p
		}
	}
	return nil
}

// findProject returns a clone of the first project that match accepts.
func (db *DB) findProject(ctx context.Context, what string, match func(*database.ProjectInfo) bool) (*database.ProjectInfo, error) {
	if err := db.check(ctx, "find project"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	for _, p := range s.projects {
		if match(p) {
			return cloneProject(p), nil
		}
	}
	return nil, fmt.Errorf("find project by %s: %w", what, database.ErrProjectNotFound)
}

// EnsureDefaultProject implements database.Accounts.
func (db *DB) EnsureDefaultProject(ctx context.Context, owner string) (*database.ProjectInfo, error) {
	if err := db.check(ctx, "ensure default project"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if p, ok := s.projects[database.DefaultProjectID]; ok {
		return cloneProject(p), nil
	}
	p, err := s.create(database.DefaultProjectID, owner, database.DefaultProjectName)
	if err != nil {
		return nil, fmt.Errorf("ensure default project: %w", err)
	}
	return cloneProject(p), nil
}

// ListProjects implements database.Accounts.
func (db *DB) ListProjects(ctx context.Context, owner string) ([]*database.ProjectInfo, error) {
	if err := db.check(ctx, "list projects"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []*database.ProjectInfo
	for _, p := range s.projects {
		if p.Owner == owner {
			out = append(out, cloneProject(p))
		}
	}
	// IDs rise in creation order.
	slices.SortFunc(out, func(a, b *database.ProjectInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// FindProjectByName implements database.Accounts.
func (db *DB) FindProjectByName(ctx context.Context, owner, name string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "name", func(p *database.ProjectInfo) bool { return p.Owner == owner && p.Name == name })
}

// FindProjectByID implements database.Accounts.
func (db *DB) FindProjectByID(ctx context.Context, id string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "id", func(p *database.ProjectInfo) bool { return p.ID == id })
}

// FindProjectByPublicKey implements database.Accounts.
func (db *DB) FindProjectByPublicKey(ctx context.Context, publicKey string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "public key", func(p *database.ProjectInfo) bool { return p.PublicKey == publicKey })
}

// FindProjectBySecretKey implements database.Accounts.
func (db *DB) FindProjectBySecretKey(ctx context.Context, secretKey string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "secret key", func(p *database.ProjectInfo) bool { return p.SecretKey == secretKey })
}

// UpdateProject implements database.Accounts.
func (db *DB) UpdateProject(ctx context.Context, owner, id string, u *database.ProjectUpdate) (*database.ProjectInfo, error) {
	if err := db.check(ctx, "update project"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	p, ok := s.projects[id]
	if !ok || p.Owner != owner {
		return nil, fmt.Errorf("update project %s: %w", id, database.ErrProjectNotFound)
	}
	if u.Name != nil && *u.Name != p.Name && s.byName(owner, *u.Name) != nil {
		return nil, fmt.Errorf("update project %s: name %q: %w", id, *u.Name, database.ErrProjectAlreadyExists)
	}
	u.Apply(p)
	p.UpdatedAt = time.Now().UTC()
	return cloneProject(p), nil
}

// ClientDeactivateThresholds implements database.Accounts.
func (db *DB) ClientDeactivateThresholds(ctx context.Context) (map[string]string, error) {
	if err := db.check(ctx, "list client deactivate thresholds"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string)
	for id, p := range s.projects {
		if p.ClientDeactivateThreshold != "" {
			out[id] = p.ClientDeactivateThreshold
		}
	}
	return out, nil
}

// EnsureSecret implements database.Accounts.
func (db *DB) EnsureSecret(ctx context.Context, name, candidate string) (string, error) {
	if err := db.check(ctx, "ensure secret"); err != nil {
		return "", err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if v, ok := s.secrets[name]; ok {
		return v, nil
	}
	s.secrets[name] = candidate
	return candidate, nil
}
