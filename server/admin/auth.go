package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// SessionCookie is the cookie the dashboard's session travels in, as
// upstream names it: its value is an admin token.
const SessionCookie = "yorkie_session"

// Authorization schemes of admin calls, as upstream's clients send them.
const (
	schemeBearer = "Bearer"
	schemeAPIKey = "API-Key"
)

// CodePermissionDenied is the ErrorInfo code of a caller whose role in a
// project is too low for the call.
const CodePermissionDenied = "ErrPermissionDenied"

// Caller is who made an admin call, as Authorize found it.
type Caller struct {
	// User is the account whose admin token or session cookie the call
	// carried; nil when it carried a project's secret key.
	User *database.UserInfo
	// Project is the project the call is about: the one whose secret key it
	// carried, or the one its Need named. Nil for calls about no project.
	Project *database.ProjectInfo
	// Role is the caller's role in Project. A secret key holds the whole
	// power of its project (RoleOwner), as upstream's does.
	Role database.MemberRole
}

// Need says what an admin call requires of its caller. Build it with
// NeedUser, NeedAny, NeedProjectKey, NeedProjectName or NeedProjectID.
type Need struct {
	user, key   bool
	projectName string
	projectID   string
	byProject   bool
	role        database.MemberRole
}

// NeedUser is for calls about the caller's own account and projects
// (CreateProject, ListProjects, AcceptInvite): a user's admin token or
// session cookie.
func NeedUser() Need { return Need{user: true} }

// NeedAny accepts a user or a project's secret key (GetServerVersion).
func NeedAny() Need { return Need{user: true, key: true} }

// NeedProjectKey is for the calls that act on one project's data without
// naming the project (documents, channels, schemas, stats): the request
// must carry the project's secret key, "Authorization: API-Key <secret
// key>", as upstream's dashboard and CLI send it. Caller.Project is that
// project.
func NeedProjectKey() Need { return Need{key: true} }

// NeedProjectName is for calls that name a project (its project_name
// field): a user who owns the project or is its member with at least role.
// A project the user cannot see is answered as not found.
func NeedProjectName(name string, role database.MemberRole) Need {
	return Need{user: true, byProject: true, projectName: name, role: role}
}

// NeedProjectID is NeedProjectName for calls that name a project by ID
// (UpdateProject, RotateProjectKeys).
func NeedProjectID(id string, role database.MemberRole) Need {
	return Need{user: true, byProject: true, projectID: id, role: role}
}

// Authorize finds the caller of an admin call from its headers and checks
// it may make the call, before the call reads anything. Every AdminService
// call but SignUp, LogIn, ChangePassword and DeleteAccount (which check a
// password instead) starts with it; call it first and return its error as
// it is: it is already a Connect error with upstream's codes.
//
// Credentials, first found wins: the authorization header ("Bearer
// <admin token>" or "API-Key <project secret key>"), then the dashboard's
// session cookie (SessionCookie, holding an admin token). A token must be
// signed by this cluster, unexpired, and issued since its user last changed
// password; an empty or unknown secret key is refused.
func (s *Service) Authorize(ctx context.Context, h http.Header, need Need) (*Caller, error) {
	scheme, value, err := credentials(h)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(scheme, schemeAPIKey) {
		if !need.key {
			return nil, unauthenticated(errors.New("this call needs a user's admin token or session, not a project's secret key"))
		}
		p, err := s.db.FindProjectBySecretKey(ctx, value)
		if errors.Is(err, database.ErrProjectNotFound) {
			return nil, unauthenticated(errors.New("unknown project secret key"))
		}
		if err != nil {
			return nil, s.toConnect(ctx, err)
		}
		return &Caller{Project: p, Role: database.RoleOwner}, nil
	}
	user, err := s.userOfToken(ctx, value)
	if err != nil {
		return nil, err
	}
	if !need.user {
		return nil, unauthenticated(errors.New("this call needs the project's secret key: authorization: API-Key <secret key>"))
	}
	c := &Caller{User: user}
	if !need.byProject {
		return c, nil
	}
	if need.projectID != "" || need.projectName == "" {
		c.Project, c.Role, err = s.projectByID(ctx, user, need.projectID)
	} else {
		c.Project, c.Role, err = s.projectByName(ctx, user, need.projectName)
	}
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if !c.Role.AtLeast(need.role) {
		return nil, newError(connect.CodePermissionDenied, CodePermissionDenied,
			fmt.Errorf("your role in project %q is %s; the call needs %s or higher", c.Project.Name, c.Role, need.role))
	}
	return c, nil
}

// credentials returns the scheme and value of the call's credentials.
func credentials(h http.Header) (scheme, value string, err error) {
	raw := strings.TrimSpace(h.Get("Authorization"))
	if raw == "" {
		cookie, cerr := (&http.Request{Header: h}).Cookie(SessionCookie)
		if cerr != nil || cookie.Value == "" {
			return "", "", unauthenticated(errors.New(
				"no credentials: log in and send authorization: Bearer <token>, a session cookie, or authorization: API-Key <project secret key>"))
		}
		return schemeBearer, cookie.Value, nil
	}
	scheme, value, _ = strings.Cut(raw, " ")
	value = strings.TrimSpace(value)
	if (!strings.EqualFold(scheme, schemeBearer) && !strings.EqualFold(scheme, schemeAPIKey)) || value == "" {
		return "", "", unauthenticated(errors.New("malformed authorization header: want Bearer <token> or API-Key <project secret key>"))
	}
	return scheme, value, nil
}

// userOfToken returns the user a valid admin token names.
func (s *Service) userOfToken(ctx context.Context, token string) (*database.UserInfo, error) {
	c, err := s.tokens.verify(token)
	if err != nil {
		return nil, unauthenticated(err)
	}
	user, err := s.db.FindUserByName(ctx, c.Username)
	if errors.Is(err, database.ErrUserNotFound) {
		return nil, unauthenticated(fmt.Errorf("the token's user %q no longer exists", c.Username))
	}
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if !s.tokens.samePassword(c, user.HashedPassword) {
		return nil, unauthenticated(fmt.Errorf("%w: issued before the password changed; log in again", ErrExpiredToken))
	}
	return user, nil
}

// roleIn returns the user's role in the project, or ErrProjectNotFound when
// the user neither owns it nor is its member.
func (s *Service) roleIn(ctx context.Context, user *database.UserInfo, p *database.ProjectInfo) (database.MemberRole, error) {
	if p.Owner == user.ID {
		return database.RoleOwner, nil
	}
	m, err := s.db.FindMember(ctx, p.ID, user.ID)
	if errors.Is(err, database.ErrMemberNotFound) {
		return "", fmt.Errorf("project %q: %w", p.Name, database.ErrProjectNotFound)
	}
	if err != nil {
		return "", err
	}
	return m.Role, nil
}

func (s *Service) projectByID(ctx context.Context, user *database.UserInfo, id string) (*database.ProjectInfo, database.MemberRole, error) {
	p, err := s.db.FindProjectByID(ctx, id)
	if err != nil {
		return nil, "", err
	}
	role, err := s.roleIn(ctx, user, p)
	if err != nil {
		return nil, "", err
	}
	return p, role, nil
}

// projectByName finds the project with the name among those the user owns,
// then among those the user is a member of.
func (s *Service) projectByName(ctx context.Context, user *database.UserInfo, name string) (*database.ProjectInfo, database.MemberRole, error) {
	p, err := s.db.FindProjectByName(ctx, user.ID, name)
	if err == nil {
		return p, database.RoleOwner, nil
	}
	if !errors.Is(err, database.ErrProjectNotFound) {
		return nil, "", err
	}
	ms, err := s.db.ListMemberships(ctx, user.ID)
	if err != nil {
		return nil, "", err
	}
	for _, m := range ms {
		p, err := s.db.FindProjectByID(ctx, m.ProjectID)
		if errors.Is(err, database.ErrProjectNotFound) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if p.Name == name {
			return p, m.Role, nil
		}
	}
	return nil, "", fmt.Errorf("project %q: %w", name, database.ErrProjectNotFound)
}
