package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// memberStore keeps memberships and invites under a lock of their own.
type memberStore struct {
	mu      sync.Mutex
	members []*database.MemberInfo // in the order they were added
	invites map[string]*database.InviteInfo
}

func (s *memberStore) index(projectID, userID string) int {
	return slices.IndexFunc(s.members, func(m *database.MemberInfo) bool {
		return m.ProjectID == projectID && m.UserID == userID
	})
}

func (s *memberStore) filter(keep func(*database.MemberInfo) bool) []*database.MemberInfo {
	out := []*database.MemberInfo{}
	for _, m := range s.members {
		if keep(m) {
			c := *m
			out = append(out, &c)
		}
	}
	return out
}

// AddMember implements database.Members.
func (db *DB) AddMember(ctx context.Context, m *database.MemberInfo) error {
	if err := db.check(ctx, "add member"); err != nil {
		return err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.index(m.ProjectID, m.UserID) >= 0 {
		return fmt.Errorf("add member %s to project %s: %w", m.UserID, m.ProjectID, database.ErrMemberAlreadyExists)
	}
	c := *m
	s.members = append(s.members, &c)
	return nil
}

// FindMember implements database.Members.
func (db *DB) FindMember(ctx context.Context, projectID, userID string) (*database.MemberInfo, error) {
	if err := db.check(ctx, "find member"); err != nil {
		return nil, err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(projectID, userID)
	if i < 0 {
		return nil, fmt.Errorf("find member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	c := *s.members[i]
	return &c, nil
}

// ListMembers implements database.Members.
func (db *DB) ListMembers(ctx context.Context, projectID string) ([]*database.MemberInfo, error) {
	if err := db.check(ctx, "list members"); err != nil {
		return nil, err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filter(func(m *database.MemberInfo) bool { return m.ProjectID == projectID }), nil
}

// ListMemberships implements database.Members.
func (db *DB) ListMemberships(ctx context.Context, userID string) ([]*database.MemberInfo, error) {
	if err := db.check(ctx, "list memberships"); err != nil {
		return nil, err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.filter(func(m *database.MemberInfo) bool { return m.UserID == userID }), nil
}

// UpdateMemberRole implements database.Members.
func (db *DB) UpdateMemberRole(ctx context.Context, projectID, userID string, role database.MemberRole) (*database.MemberInfo, error) {
	if err := db.check(ctx, "update member role"); err != nil {
		return nil, err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(projectID, userID)
	if i < 0 {
		return nil, fmt.Errorf("update role of member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	s.members[i].Role = role
	c := *s.members[i]
	return &c, nil
}

// RemoveMember implements database.Members.
func (db *DB) RemoveMember(ctx context.Context, projectID, userID string) error {
	if err := db.check(ctx, "remove member"); err != nil {
		return err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(projectID, userID)
	if i < 0 {
		return fmt.Errorf("remove member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	s.members = slices.Delete(s.members, i, i+1)
	return nil
}

// RemoveMemberships implements database.Members.
func (db *DB) RemoveMemberships(ctx context.Context, userID string) error {
	if err := db.check(ctx, "remove memberships"); err != nil {
		return err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members = slices.DeleteFunc(s.members, func(m *database.MemberInfo) bool { return m.UserID == userID })
	return nil
}

// CreateInvite implements database.Members.
func (db *DB) CreateInvite(ctx context.Context, inv *database.InviteInfo) error {
	if err := db.check(ctx, "create invite"); err != nil {
		return err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.invites == nil {
		s.invites = make(map[string]*database.InviteInfo)
	}
	c := *inv
	s.invites[inv.TokenHash] = &c
	return nil
}

// FindInvite implements database.Members.
func (db *DB) FindInvite(ctx context.Context, tokenHash string) (*database.InviteInfo, error) {
	if err := db.check(ctx, "find invite"); err != nil {
		return nil, err
	}
	s := &db.members
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.invites[tokenHash]
	if !ok {
		return nil, fmt.Errorf("find invite: %w", database.ErrInviteNotFound)
	}
	c := *inv
	return &c, nil
}
