package database

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// MemberRole is what a user may do in a project, as upstream names it.
// The owner (the user who created the project) holds RoleOwner without a
// member record; invited users hold RoleAdmin or RoleMember.
type MemberRole string

// Member roles, highest first.
const (
	RoleOwner  MemberRole = "owner"
	RoleAdmin  MemberRole = "admin"
	RoleMember MemberRole = "member"
)

// ErrInvalidMemberRole: a role other than owner, admin or member.
var ErrInvalidMemberRole = errors.New("invalid member role")

// ParseMemberRole returns the role named s or ErrInvalidMemberRole.
func ParseMemberRole(s string) (MemberRole, error) {
	switch r := MemberRole(s); r {
	case RoleOwner, RoleAdmin, RoleMember:
		return r, nil
	}
	return "", fmt.Errorf("role %q: want owner, admin or member: %w", s, ErrInvalidMemberRole)
}

func (r MemberRole) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleAdmin:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// AtLeast reports whether r grants everything min grants.
func (r MemberRole) AtLeast(min MemberRole) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// Sentinel errors of members and invites.
var (
	// ErrMemberNotFound: the user is not a member of the project.
	ErrMemberNotFound = errors.New("member not found")
	// ErrMemberAlreadyExists: the user is a member of the project already.
	ErrMemberAlreadyExists = errors.New("member already exists")
	// ErrInviteNotFound: no invite has the token.
	ErrInviteNotFound = errors.New("invite not found")
)

// MemberInfo is one user's membership of one project.
type MemberInfo struct {
	ProjectID string
	UserID    string
	Role      MemberRole
	// InvitedBy is the ID of the user whose invite the member accepted.
	InvitedBy string
	InvitedAt time.Time
}

// InviteInfo is a reusable invite to a project: every user who presents its
// token before it expires becomes a member with its role.
type InviteInfo struct {
	// TokenHash identifies the invite: the caller stores a digest of the
	// token it hands out, never the token itself.
	TokenHash string
	ProjectID string
	Role      MemberRole
	CreatedBy string
	CreatedAt time.Time
	// ExpiresAt is when the invite stops working; zero: never (an
	// upstream invite may lack an expiry).
	ExpiresAt time.Time
}

// InviteTokenHash is the digest of an invite token that InviteInfo keeps.
func InviteTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Members stores project memberships and invites.
type Members interface {
	// AddMember stores m (InvitedAt set by the caller), or fails with
	// ErrMemberAlreadyExists when the user is a member of the project.
	AddMember(ctx context.Context, m *MemberInfo) error
	// FindMember returns the user's membership of the project or
	// ErrMemberNotFound.
	FindMember(ctx context.Context, projectID, userID string) (*MemberInfo, error)
	// ListMembers returns the project's members, oldest first.
	ListMembers(ctx context.Context, projectID string) ([]*MemberInfo, error)
	// ListMemberships returns the user's memberships, oldest first.
	ListMemberships(ctx context.Context, userID string) ([]*MemberInfo, error)
	// UpdateMemberRole changes a member's role; ErrMemberNotFound if the
	// user is not a member of the project.
	UpdateMemberRole(ctx context.Context, projectID, userID string, role MemberRole) (*MemberInfo, error)
	// RemoveMember ends a membership; ErrMemberNotFound if there is none.
	RemoveMember(ctx context.Context, projectID, userID string) error
	// RemoveMemberships ends every membership of the user.
	RemoveMemberships(ctx context.Context, userID string) error
	// CreateInvite stores an invite.
	CreateInvite(ctx context.Context, inv *InviteInfo) error
	// FindInvite returns the invite with the token digest or
	// ErrInviteNotFound (expiry is the caller's to check).
	FindInvite(ctx context.Context, tokenHash string) (*InviteInfo, error)
}
