package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Error codes of members and invites, as upstream names them.
const (
	CodeMemberNotFound         = "ErrMemberNotFound"
	CodeInviteNotFound         = "ErrInviteNotFound"
	CodeInviteExpired          = "ErrInviteExpired"
	CodeInvalidInviteExpireOpt = "ErrInvalidInviteExpireOpt"
	CodeOwnerCannotAccept      = "ErrOwnerCannotAcceptInvite"
)

// inviteLifetimes are how long an invite stays valid, by option.
var inviteLifetimes = map[api.InviteExpireOption]time.Duration{
	api.InviteExpireOption_INVITE_EXPIRE_OPTION_ONE_HOUR:          time.Hour,
	api.InviteExpireOption_INVITE_EXPIRE_OPTION_TWENTY_FOUR_HOURS: 24 * time.Hour,
	api.InviteExpireOption_INVITE_EXPIRE_OPTION_SEVEN_DAYS:        7 * 24 * time.Hour,
}

// grantableRole parses a role an owner or admin may hand out: admin or
// member. Ownership is not transferable.
func grantableRole(s string) (database.MemberRole, error) {
	r, err := database.ParseMemberRole(s)
	if err == nil && r == database.RoleOwner {
		err = errors.New("role owner: the owner is the user who created the project; grant admin or member")
	}
	return r, err
}

// ListMembers lists the project's owner, then its members, oldest first;
// every member may.
func (s *Service) ListMembers(ctx context.Context, req *connect.Request[api.ListMembersRequest]) (*connect.Response[api.ListMembersResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectName(req.Msg.ProjectName, database.RoleMember))
	if err != nil {
		return nil, err
	}
	p := c.Project
	res := &api.ListMembersResponse{}
	if owner, err := s.db.FindUserByID(ctx, p.Owner); err == nil {
		res.Members = append(res.Members, &api.Member{
			Id: p.Owner, ProjectId: p.ID, UserId: p.Owner, Username: owner.Username,
			Role: string(database.RoleOwner), InvitedAt: timestamppb.New(p.CreatedAt),
		})
	} else if !errors.Is(err, database.ErrUserNotFound) {
		return nil, s.toConnect(ctx, err)
	}
	ms, err := s.db.ListMembers(ctx, p.ID)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	for _, m := range ms {
		u, err := s.db.FindUserByID(ctx, m.UserID)
		if errors.Is(err, database.ErrUserNotFound) {
			continue // an account deleted since
		}
		if err != nil {
			return nil, s.toConnect(ctx, err)
		}
		res.Members = append(res.Members, toMember(m, u.Username))
	}
	return connect.NewResponse(res), nil
}

// memberByName finds the member of the project with the username; an
// unknown user and a user who is not a member are both ErrMemberNotFound,
// so the call tells nothing about which names exist.
func (s *Service) memberByName(ctx context.Context, projectID, username string) (*database.UserInfo, error) {
	u, err := s.db.FindUserByName(ctx, username)
	if errors.Is(err, database.ErrUserNotFound) {
		return nil, fmt.Errorf("%q: %w", username, database.ErrMemberNotFound)
	}
	if err != nil {
		return nil, err
	}
	if _, err := s.db.FindMember(ctx, projectID, u.ID); err != nil {
		return nil, err
	}
	return u, nil
}

// RemoveMember ends a user's membership; the caller must be the project's
// owner or admin. The owner is no member and cannot be removed.
func (s *Service) RemoveMember(ctx context.Context, req *connect.Request[api.RemoveMemberRequest]) (*connect.Response[api.RemoveMemberResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectName(req.Msg.ProjectName, database.RoleAdmin))
	if err != nil {
		return nil, err
	}
	u, err := s.memberByName(ctx, c.Project.ID, req.Msg.Username)
	if err == nil {
		err = s.db.RemoveMember(ctx, c.Project.ID, u.ID)
	}
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.RemoveMemberResponse{}), nil
}

// UpdateMemberRole changes a member's role to admin or member; the caller
// must be the project's owner or admin.
func (s *Service) UpdateMemberRole(ctx context.Context, req *connect.Request[api.UpdateMemberRoleRequest]) (*connect.Response[api.UpdateMemberRoleResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectName(req.Msg.ProjectName, database.RoleAdmin))
	if err != nil {
		return nil, err
	}
	role, err := grantableRole(req.Msg.Role)
	if err != nil {
		return nil, invalidArgument(err)
	}
	u, err := s.memberByName(ctx, c.Project.ID, req.Msg.Username)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	m, err := s.db.UpdateMemberRole(ctx, c.Project.ID, u.ID, role)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.UpdateMemberRoleResponse{Member: toMember(m, u.Username)}), nil
}

// CreateInvite makes a reusable invite to the project with a role and a
// lifetime; the caller must be the project's owner or admin. The token is
// returned once: the database keeps only its digest.
func (s *Service) CreateInvite(ctx context.Context, req *connect.Request[api.CreateInviteRequest]) (*connect.Response[api.CreateInviteResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectName(req.Msg.ProjectName, database.RoleAdmin))
	if err != nil {
		return nil, err
	}
	role, err := grantableRole(req.Msg.Role)
	if err != nil {
		return nil, invalidArgument(err)
	}
	life, ok := inviteLifetimes[req.Msg.ExpireOption]
	if !ok {
		return nil, newError(connect.CodeInvalidArgument, CodeInvalidInviteExpireOpt,
			fmt.Errorf("expire option %v: want one hour, 24 hours or seven days", req.Msg.ExpireOption))
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	token := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	if err := s.db.CreateInvite(ctx, &database.InviteInfo{
		TokenHash: database.InviteTokenHash(token), ProjectID: c.Project.ID, Role: role,
		CreatedBy: c.User.ID, CreatedAt: now, ExpiresAt: now.Add(life),
	}); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.CreateInviteResponse{Token: token}), nil
}

// AcceptInvite makes the caller a member of the invite's project with its
// role. A user who is a member already keeps the membership it has.
func (s *Service) AcceptInvite(ctx context.Context, req *connect.Request[api.AcceptInviteRequest]) (*connect.Response[api.AcceptInviteResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedUser())
	if err != nil {
		return nil, err
	}
	if req.Msg.Token == "" {
		return nil, invalidArgument(errors.New("no invite token"))
	}
	inv, err := s.db.FindInvite(ctx, database.InviteTokenHash(req.Msg.Token))
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if !inv.ExpiresAt.IsZero() && !s.cfg.Now().Before(inv.ExpiresAt) {
		return nil, newError(connect.CodeInvalidArgument, CodeInviteExpired, errors.New("the invite has expired"))
	}
	p, err := s.db.FindProjectByID(ctx, inv.ProjectID)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if p.Owner == c.User.ID {
		return nil, newError(connect.CodeFailedPrecondition, CodeOwnerCannotAccept, errors.New("you own the project"))
	}
	// Calls name projects by name: the caller's projects must keep
	// distinct ones.
	visible, err := s.visibleProjects(ctx, c.User)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	for _, q := range visible {
		if q.Name == p.Name && q.ID != p.ID {
			return nil, newError(connect.CodeAlreadyExists, CodeProjectExists,
				fmt.Errorf("you have a project named %q already; rename yours to join this one", p.Name))
		}
	}
	m := &database.MemberInfo{
		ProjectID: p.ID, UserID: c.User.ID, Role: inv.Role, InvitedBy: inv.CreatedBy,
		InvitedAt: s.cfg.Now().UTC().Truncate(time.Millisecond),
	}
	err = s.db.AddMember(ctx, m)
	if errors.Is(err, database.ErrMemberAlreadyExists) {
		m, err = s.db.FindMember(ctx, p.ID, c.User.ID)
	}
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.AcceptInviteResponse{Member: toMember(m, c.User.Username)}), nil
}

func toMember(m *database.MemberInfo, username string) *api.Member {
	return &api.Member{
		Id: m.ProjectID + ":" + m.UserID, ProjectId: m.ProjectID, UserId: m.UserID, Username: username,
		Role: string(m.Role), InvitedAt: timestamppb.New(m.InvitedAt),
	}
}
