package admin

import (
	"context"
	"slices"
	"strings"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// CreateProject creates a project owned by the caller.
func (s *Service) CreateProject(ctx context.Context, req *connect.Request[api.CreateProjectRequest]) (*connect.Response[api.CreateProjectResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedUser())
	if err != nil {
		return nil, err
	}
	if err := validateProjectName(req.Msg.Name); err != nil {
		return nil, invalidArgument(err)
	}
	if err := s.checkProjectLimit(ctx, c.User); err != nil {
		return nil, err
	}
	p, err := s.db.CreateProject(ctx, c.User.ID, req.Msg.Name)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.CreateProjectResponse{Project: s.toAPIProject(p)}), nil
}

// ListProjects lists the projects the caller owns or is a member of, in
// creation order.
func (s *Service) ListProjects(ctx context.Context, req *connect.Request[api.ListProjectsRequest]) (*connect.Response[api.ListProjectsResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedUser())
	if err != nil {
		return nil, err
	}
	ps, err := s.visibleProjects(ctx, c.User)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	res := &api.ListProjectsResponse{Projects: make([]*api.Project, 0, len(ps))}
	for _, p := range ps {
		res.Projects = append(res.Projects, s.toAPIProject(p))
	}
	return connect.NewResponse(res), nil
}

// visibleProjects returns the projects the user owns or is a member of.
func (s *Service) visibleProjects(ctx context.Context, user *database.UserInfo) ([]*database.ProjectInfo, error) {
	ps, err := s.db.ListProjects(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	ms, err := s.db.ListMemberships(ctx, user.ID)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		p, err := s.db.FindProjectByID(ctx, m.ProjectID)
		if err != nil {
			continue // a project gone since; nothing to show
		}
		if !slices.ContainsFunc(ps, func(q *database.ProjectInfo) bool { return q.ID == p.ID }) {
			ps = append(ps, p)
		}
	}
	// IDs rise in creation order.
	slices.SortFunc(ps, func(a, b *database.ProjectInfo) int { return strings.Compare(a.ID, b.ID) })
	return ps, nil
}

// GetProject returns the project with the name that the caller owns or is
// a member of.
func (s *Service) GetProject(ctx context.Context, req *connect.Request[api.GetProjectRequest]) (*connect.Response[api.GetProjectResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectName(req.Msg.Name, database.RoleMember))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&api.GetProjectResponse{Project: s.toAPIProject(c.Project)}), nil
}

// UpdateProject changes the fields the request sets; the caller must be the
// project's owner or admin.
func (s *Service) UpdateProject(ctx context.Context, req *connect.Request[api.UpdateProjectRequest]) (*connect.Response[api.UpdateProjectResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectID(req.Msg.Id, database.RoleAdmin))
	if err != nil {
		return nil, err
	}
	u, err := projectUpdate(req.Msg.Fields)
	if err != nil {
		return nil, err
	}
	p, err := s.db.UpdateProject(ctx, c.Project.Owner, c.Project.ID, u)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	s.projectChanged(p)
	return connect.NewResponse(&api.UpdateProjectResponse{Project: s.toAPIProject(p)}), nil
}

// RotateProjectKeys gives the project new public and secret keys; the old
// ones stop working at once. The caller must be its owner or admin.
func (s *Service) RotateProjectKeys(ctx context.Context, req *connect.Request[api.RotateProjectKeysRequest]) (*connect.Response[api.RotateProjectKeysResponse], error) {
	c, err := s.Authorize(ctx, req.Header(), NeedProjectID(req.Msg.Id, database.RoleAdmin))
	if err != nil {
		return nil, err
	}
	p, err := s.db.RotateProjectKeys(ctx, c.Project.ID)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	s.projectChanged(p)
	return connect.NewResponse(&api.RotateProjectKeysResponse{Project: s.toAPIProject(p)}), nil
}

// toAPIProject is a project as the admin API shows it: a setting the
// project leaves to the server reads as the server's value, which is what
// applies to it (upstream's projects always carry one, and the dashboard
// requires it).
func (s *Service) toAPIProject(p *database.ProjectInfo) *api.Project {
	out := toProject(p)
	if out.ClientDeactivateThreshold == "" && s.cfg.DefaultClientDeactivateThreshold > 0 {
		out.ClientDeactivateThreshold = s.cfg.DefaultClientDeactivateThreshold.String()
	}
	return out
}

// projectChanged tells this node's caches about a stored project change.
func (s *Service) projectChanged(p *database.ProjectInfo) {
	if s.cfg.OnProjectUpdated != nil {
		s.cfg.OnProjectUpdated(p)
	}
}
