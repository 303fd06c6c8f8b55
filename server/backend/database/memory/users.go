package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// CreateExternalUser implements database.AccountChanges.
func (db *DB) CreateExternalUser(ctx context.Context, username, provider string) (*database.UserInfo, error) {
	u, err := db.CreateUser(ctx, username, "")
	if err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[username].AuthProvider = provider
	u.AuthProvider = provider
	return u, nil
}

// FindUserByID implements database.AccountChanges.
func (db *DB) FindUserByID(ctx context.Context, id string) (*database.UserInfo, error) {
	if err := db.check(ctx, "find user"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		if u.ID == id {
			c := *u
			return &c, nil
		}
	}
	return nil, fmt.Errorf("find user %s: %w", id, database.ErrUserNotFound)
}

// UpdatePassword implements database.AccountChanges.
func (db *DB) UpdatePassword(ctx context.Context, username, hashedPassword string) (*database.UserInfo, error) {
	if err := db.check(ctx, "update password"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[username]
	if !ok {
		return nil, fmt.Errorf("update password of %q: %w", username, database.ErrUserNotFound)
	}
	u.HashedPassword = hashedPassword
	c := *u
	return &c, nil
}

// DeleteUser implements database.AccountChanges.
func (db *DB) DeleteUser(ctx context.Context, username string) error {
	if err := db.check(ctx, "delete user"); err != nil {
		return err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[username]; !ok {
		return fmt.Errorf("delete user %q: %w", username, database.ErrUserNotFound)
	}
	delete(s.users, username)
	return nil
}

// RotateProjectKeys implements database.AccountChanges.
func (db *DB) RotateProjectKeys(ctx context.Context, id string) (*database.ProjectInfo, error) {
	if err := db.check(ctx, "rotate project keys"); err != nil {
		return nil, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	p, ok := s.projects[id]
	if !ok {
		return nil, fmt.Errorf("rotate keys of project %s: %w", id, database.ErrProjectNotFound)
	}
	p.PublicKey, p.SecretKey = database.NewProjectKey(), database.NewProjectKey()
	p.UpdatedAt = time.Now().UTC()
	return cloneProject(p), nil
}

// CountProjects implements database.AccountChanges.
func (db *DB) CountProjects(ctx context.Context, owner string) (int, error) {
	if err := db.check(ctx, "count projects"); err != nil {
		return 0, err
	}
	s := &db.accounts
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.projects {
		if p.Owner == owner {
			n++
		}
	}
	return n, nil
}
