package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// codeRevisionNotFound is upstream's name for a revision a document does
// not have.
const codeRevisionNotFound = "ErrRevisionNotFound"

// RevisionRestorer restores a revision of a document at the node that owns
// it (rpc.Service.RestoreRevisionAsOperator), where the change that
// replaces the root is made and every attached client pulls it.
type RevisionRestorer interface {
	RestoreRevisionAsOperator(ctx context.Context, p *database.ProjectInfo, docID, key, revisionID string) error
}

// revisionProject authorises a revision call: a user with at least role in
// the project it names, or, when it names none, the project whose secret
// key the call carries.
func (s *Service) revisionProject(ctx context.Context, h http.Header, name string, role database.MemberRole) (*database.ProjectInfo, error) {
	need := NeedProjectKey()
	if name != "" {
		need = NeedProjectName(name, role)
	}
	c, err := s.Authorize(ctx, h, need)
	if err != nil {
		return nil, err
	}
	return c.Project, nil
}

// revisionDocument finds the project's document with the key: the live
// one, or the newest removed one, whose revisions stay readable.
func (s *Service) revisionDocument(ctx context.Context, p *database.ProjectInfo, key string) (*database.DocInfo, error) {
	if err := validateDocumentKey(key); err != nil {
		return nil, invalidArgument(err)
	}
	doc, err := s.db.FindDocumentByKey(ctx, p.ID, key)
	if err != nil {
		return nil, s.revisionError(ctx, err)
	}
	return doc, nil
}

// revisionError maps the error of a revision call.
func (s *Service) revisionError(ctx context.Context, err error) error {
	if errors.Is(err, database.ErrRevisionNotFound) {
		return newError(connect.CodeNotFound, codeRevisionNotFound, err)
	}
	if errors.Is(err, backend.ErrRevisionNotRestorable) {
		return newError(connect.CodeFailedPrecondition, "ErrFailedPrecondition", err)
	}
	return s.documentError(ctx, err)
}

func revisionSummary(r *database.Revision) *api.RevisionSummary {
	return &api.RevisionSummary{
		Id:          r.ID,
		Label:       r.Label,
		Description: r.Description,
		Snapshot:    string(r.Snapshot),
		CreatedAt:   timestamppb.New(r.CreatedAt),
	}
}

// ListRevisionsByAdmin returns a page of a document's revisions, newest
// first unless is_forward, without their content; total_count is the
// page's length, as upstream's.
func (s *Service) ListRevisionsByAdmin(ctx context.Context, req *connect.Request[api.ListRevisionsByAdminRequest]) (*connect.Response[api.ListRevisionsByAdminResponse], error) {
	m := req.Msg
	p, err := s.revisionProject(ctx, req.Header(), m.GetProjectName(), database.RoleMember)
	if err != nil {
		return nil, err
	}
	if m.GetPageSize() < 0 || m.GetOffset() < 0 {
		return nil, invalidArgument(fmt.Errorf("page_size %d and offset %d must not be negative", m.GetPageSize(), m.GetOffset()))
	}
	doc, err := s.revisionDocument(ctx, p, m.GetDocumentKey())
	if err != nil {
		return nil, err
	}
	revs, err := s.db.ListRevisions(ctx, p.ID, doc.ID, database.RevisionPaging{
		PageSize: int(m.GetPageSize()), Offset: int(m.GetOffset()), Forward: m.GetIsForward(),
	})
	if err != nil {
		return nil, s.revisionError(ctx, err)
	}
	out := &api.ListRevisionsByAdminResponse{Revisions: make([]*api.RevisionSummary, len(revs)), TotalCount: int32(len(revs))}
	for i, r := range revs {
		out.Revisions[i] = revisionSummary(r)
	}
	return connect.NewResponse(out), nil
}

// GetRevisionByAdmin returns one revision of a document with its content.
func (s *Service) GetRevisionByAdmin(ctx context.Context, req *connect.Request[api.GetRevisionByAdminRequest]) (*connect.Response[api.GetRevisionByAdminResponse], error) {
	m := req.Msg
	p, err := s.revisionProject(ctx, req.Header(), m.GetProjectName(), database.RoleMember)
	if err != nil {
		return nil, err
	}
	if m.GetRevisionId() == "" {
		return nil, invalidArgument(errors.New("no revision_id"))
	}
	doc, err := s.revisionDocument(ctx, p, m.GetDocumentKey())
	if err != nil {
		return nil, err
	}
	rev, err := s.db.FindRevision(ctx, p.ID, doc.ID, m.GetRevisionId())
	if err != nil {
		return nil, s.revisionError(ctx, err)
	}
	return connect.NewResponse(&api.GetRevisionByAdminResponse{Revision: revisionSummary(rev)}), nil
}

// RestoreRevisionByAdmin brings a document back to one of its revisions,
// as a change its owner makes and every attached client pulls. Only the
// project's owner and admins may, as upstream. An unknown revision is
// not_found (ErrRevisionNotFound) and a removed document
// failed_precondition (ErrDocumentRemoved), with nothing changed.
func (s *Service) RestoreRevisionByAdmin(ctx context.Context, req *connect.Request[api.RestoreRevisionByAdminRequest]) (*connect.Response[api.RestoreRevisionByAdminResponse], error) {
	m := req.Msg
	p, err := s.revisionProject(ctx, req.Header(), m.GetProjectName(), database.RoleAdmin)
	if err != nil {
		return nil, err
	}
	if m.GetRevisionId() == "" {
		return nil, invalidArgument(errors.New("no revision_id"))
	}
	if s.cfg.Revisions == nil {
		return nil, newError(connect.CodeUnavailable, CodeUnavailable, errors.New("documents are not served by this node yet"))
	}
	doc, err := s.revisionDocument(ctx, p, m.GetDocumentKey())
	if err != nil {
		return nil, err
	}
	// Checked here too, so that an unknown revision of a document
	// nobody serves costs no owner.
	if _, err := s.db.FindRevision(ctx, p.ID, doc.ID, m.GetRevisionId()); err != nil {
		return nil, s.revisionError(ctx, err)
	}
	if err := s.cfg.Revisions.RestoreRevisionAsOperator(ctx, p, doc.ID, doc.Key, m.GetRevisionId()); err != nil {
		return nil, s.revisionError(ctx, err)
	}
	s.logger.InfoContext(ctx, "revision restored", "project", p.ID, "key", doc.Key, "revision", m.GetRevisionId())
	return connect.NewResponse(&api.RestoreRevisionByAdminResponse{}), nil
}
