package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/schema"
)

// Error codes of schema calls, as upstream names them where it has one.
const (
	CodeSchemaNotFound      = "ErrSchemaNotFound"
	CodeSchemaAlreadyExists = "ErrSchemaAlreadyExists"
	CodeSchemaInUse         = "ErrSchemaInUse"
)

// reservedSchemaNames are names upstream refuses for schemas.
var reservedSchemaNames = map[string]bool{"new": true}

// schemaProject returns the project a schema call acts on: the one whose
// secret key the call carries ("authorization: API-Key <secret key>", as
// upstream's dashboard sends schema calls).
func (s *Service) schemaProject(ctx context.Context, h http.Header) (*database.ProjectInfo, error) {
	c, err := s.Authorize(ctx, h, NeedProjectKey())
	if err != nil {
		return nil, err
	}
	return c.Project, nil
}

func validateSchemaName(name string) error {
	if err := validateName("schema name", name); err != nil {
		return err
	}
	if reservedSchemaNames[name] {
		return fmt.Errorf("schema name %q is reserved", name)
	}
	return nil
}

func validateSchemaVersion(v int32) error {
	if v < 1 {
		return fmt.Errorf("schema version %d: want 1 or more", v)
	}
	return nil
}

func fromPBRules(pb []*api.Rule) []database.Rule {
	out := make([]database.Rule, len(pb))
	for i, r := range pb {
		out[i] = database.Rule{Path: r.GetPath(), Type: r.GetType()}
		for _, n := range r.GetTreeNodes() {
			out[i].TreeNodes = append(out[i].TreeNodes, database.TreeNodeRule{
				NodeType: n.GetNodeType(), Content: n.GetContent(), Marks: n.GetMarks(), Group: n.GetGroup(),
			})
		}
	}
	return out
}

func toSchema(si *database.SchemaInfo) *api.Schema {
	out := &api.Schema{
		Id: si.ID, Name: si.Name, Version: int32(si.Version), Body: si.Body,
		CreatedAt: timestamppb.New(si.CreatedAt),
	}
	for _, r := range si.Rules {
		pr := &api.Rule{Path: r.Path, Type: r.Type}
		for _, n := range r.TreeNodes {
			pr.TreeNodes = append(pr.TreeNodes, &api.TreeNodeRule{NodeType: n.NodeType, Content: n.Content, Marks: n.Marks, Group: n.Group})
		}
		out.Rules = append(out.Rules, pr)
	}
	return out
}

func toSchemas(list []*database.SchemaInfo) []*api.Schema {
	out := make([]*api.Schema, len(list))
	for i, si := range list {
		out[i] = toSchema(si)
	}
	return out
}

// schemaError maps the errors of schema storage.
func (s *Service) schemaError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, database.ErrSchemaNotFound):
		return newError(connect.CodeNotFound, CodeSchemaNotFound, err)
	case errors.Is(err, database.ErrSchemaAlreadyExists):
		return newError(connect.CodeAlreadyExists, CodeSchemaAlreadyExists, err)
	}
	return s.toConnect(ctx, err)
}

// CreateSchema stores a new version of a schema of the project.
func (s *Service) CreateSchema(ctx context.Context, req *connect.Request[api.CreateSchemaRequest]) (*connect.Response[api.CreateSchemaResponse], error) {
	p, err := s.schemaProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	m := req.Msg
	rules := fromPBRules(m.GetRules())
	if err := errors.Join(validateSchemaName(m.GetSchemaName()), validateSchemaVersion(m.GetSchemaVersion()),
		schema.CheckBody(m.GetSchemaBody()), schema.CheckRules(rules)); err != nil {
		return nil, invalidArgument(err)
	}
	created, err := s.db.CreateSchema(ctx, &database.SchemaInfo{
		ProjectID: p.ID, Name: m.GetSchemaName(), Version: int(m.GetSchemaVersion()), Body: m.GetSchemaBody(), Rules: rules,
	})
	if err != nil {
		return nil, s.schemaError(ctx, err)
	}
	return connect.NewResponse(&api.CreateSchemaResponse{Schema: toSchema(created)}), nil
}

// ListSchemas lists the newest version of each schema of the project.
func (s *Service) ListSchemas(ctx context.Context, req *connect.Request[api.ListSchemasRequest]) (*connect.Response[api.ListSchemasResponse], error) {
	p, err := s.schemaProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	list, err := s.db.ListSchemas(ctx, p.ID)
	if err != nil {
		return nil, s.schemaError(ctx, err)
	}
	return connect.NewResponse(&api.ListSchemasResponse{Schemas: toSchemas(list)}), nil
}

// GetSchema returns one version of a schema of the project.
func (s *Service) GetSchema(ctx context.Context, req *connect.Request[api.GetSchemaRequest]) (*connect.Response[api.GetSchemaResponse], error) {
	p, err := s.schemaProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	si, err := s.db.FindSchema(ctx, p.ID, req.Msg.GetSchemaName(), int(req.Msg.GetVersion()))
	if err != nil {
		return nil, s.schemaError(ctx, err)
	}
	return connect.NewResponse(&api.GetSchemaResponse{Schema: toSchema(si)}), nil
}

// GetSchemas returns every version of a schema of the project, newest first.
func (s *Service) GetSchemas(ctx context.Context, req *connect.Request[api.GetSchemasRequest]) (*connect.Response[api.GetSchemasResponse], error) {
	p, err := s.schemaProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	list, err := s.db.FindSchemaVersions(ctx, p.ID, req.Msg.GetSchemaName())
	if err != nil {
		return nil, s.schemaError(ctx, err)
	}
	return connect.NewResponse(&api.GetSchemasResponse{Schemas: toSchemas(list)}), nil
}

// RemoveSchema removes a version of a schema no live document is bound to.
func (s *Service) RemoveSchema(ctx context.Context, req *connect.Request[api.RemoveSchemaRequest]) (*connect.Response[api.RemoveSchemaResponse], error) {
	p, err := s.schemaProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	name, version := req.Msg.GetSchemaName(), int(req.Msg.GetVersion())
	key := database.SchemaKey(name, version)
	if _, err := s.db.FindSchema(ctx, p.ID, name, version); err != nil {
		return nil, s.schemaError(ctx, err)
	}
	inUse, err := s.db.SchemaInUse(ctx, p.ID, key)
	if err != nil {
		return nil, s.schemaError(ctx, err)
	}
	if inUse {
		return nil, newError(connect.CodeFailedPrecondition, CodeSchemaInUse, fmt.Errorf("schema %s is being used by a document", key))
	}
	if err := s.db.RemoveSchema(ctx, p.ID, name, version); err != nil {
		return nil, s.schemaError(ctx, err)
	}
	return connect.NewResponse(&api.RemoveSchemaResponse{}), nil
}
