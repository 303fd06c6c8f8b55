package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
)

// Revision calls are document calls: each is routed to the document's owner
// like PushPull (relayed in forward mode, refused naming the owner in
// redirect mode), which makes and restores revisions from the document it
// holds built.

// Bounds of a revision's words: the SDK sends them as the user typed them.
const (
	maxRevisionLabelBytes       = 1 << 10
	maxRevisionDescriptionBytes = 16 << 10
)

// RevisionSummary converts a stored revision to the wire's summary; the
// snapshot (YSON) is empty for a revision listed without its content.
func RevisionSummary(r *database.Revision) *api.RevisionSummary {
	return &api.RevisionSummary{
		Id:          r.ID,
		Label:       r.Label,
		Description: r.Description,
		Snapshot:    string(r.Snapshot),
		CreatedAt:   timestamppb.New(r.CreatedAt),
	}
}

// revisionCall validates the fields every revision call has and routes the
// call: to the owner, or served here on the route (project, owner epoch).
func revisionCall[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], clientID, docID string,
	verb authwebhook.Verb, method func(v1connect.YorkieServiceClient) relayFunc[Req, Res],
	serve func(rt routing.Route) (*Res, error),
) (*connect.Response[Res], error) {
	kind := routing.CallRevision
	if clientID == "" && s.router != nil && req.Header().Get(routing.HeaderForwardedBy) != "" {
		// An operator's call another node relayed (RestoreRevisionAsOperator):
		// routing refuses the mark without the cluster secret.
		kind = routing.CallAdmin
	} else if err := validate.ClientID(clientID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	if err := validate.DocumentID(docID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	p := project.FromContext(ctx)
	call := routing.DocumentCall{Kind: kind, Project: p, ClientID: clientID, DocumentID: docID, Header: req.Header()}
	return routedCall(ctx, s, req, call, s.documentByID(p, docID, verb), method, serve)
}

// CreateRevision stores the document's content at its head as a revision.
func (s *Service) CreateRevision(ctx context.Context, req *connect.Request[api.CreateRevisionRequest]) (*connect.Response[api.CreateRevisionResponse], error) {
	m := req.Msg
	if len(m.GetLabel()) > maxRevisionLabelBytes || len(m.GetDescription()) > maxRevisionDescriptionBytes {
		return nil, errinfo.InvalidArgument(fmt.Errorf("a revision's label takes up to %d bytes and its description up to %d",
			maxRevisionLabelBytes, maxRevisionDescriptionBytes))
	}
	return revisionCall(ctx, s, req, m.GetClientId(), m.GetDocumentId(), authwebhook.Read,
		func(o v1connect.YorkieServiceClient) relayFunc[api.CreateRevisionRequest, api.CreateRevisionResponse] {
			return o.CreateRevision
		},
		func(rt routing.Route) (*api.CreateRevisionResponse, error) {
			rev, err := s.backend.CreateRevision(ctx, rt.Project, rt.Epoch, m.GetClientId(), m.GetDocumentId(), m.GetLabel(), m.GetDescription())
			if err != nil {
				return nil, err
			}
			return &api.CreateRevisionResponse{Revision: RevisionSummary(rev)}, nil
		})
}

// ListRevisions returns a page of the document's revisions, newest first
// unless is_forward, without their content.
func (s *Service) ListRevisions(ctx context.Context, req *connect.Request[api.ListRevisionsRequest]) (*connect.Response[api.ListRevisionsResponse], error) {
	m := req.Msg
	paging, err := RevisionPaging(m.GetPageSize(), m.GetOffset(), m.GetIsForward())
	if err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	return revisionCall(ctx, s, req, m.GetClientId(), m.GetDocumentId(), authwebhook.Read,
		func(o v1connect.YorkieServiceClient) relayFunc[api.ListRevisionsRequest, api.ListRevisionsResponse] {
			return o.ListRevisions
		},
		func(rt routing.Route) (*api.ListRevisionsResponse, error) {
			revs, err := s.backend.ListRevisions(ctx, rt.Project, m.GetClientId(), m.GetDocumentId(), paging)
			if err != nil {
				return nil, err
			}
			out := &api.ListRevisionsResponse{Revisions: make([]*api.RevisionSummary, len(revs))}
			for i, r := range revs {
				out.Revisions[i] = RevisionSummary(r)
			}
			return out, nil
		})
}

// RevisionPaging checks a page request as the wire carries it.
func RevisionPaging(pageSize, offset int32, forward bool) (database.RevisionPaging, error) {
	if pageSize < 0 || offset < 0 {
		return database.RevisionPaging{}, fmt.Errorf("page_size %d and offset %d must not be negative", pageSize, offset)
	}
	return database.RevisionPaging{PageSize: int(pageSize), Offset: int(offset), Forward: forward}, nil
}

// GetRevision returns one revision of the document with its content.
func (s *Service) GetRevision(ctx context.Context, req *connect.Request[api.GetRevisionRequest]) (*connect.Response[api.GetRevisionResponse], error) {
	m := req.Msg
	if m.GetRevisionId() == "" {
		return nil, errinfo.InvalidArgument(errors.New("revision_id is required"))
	}
	return revisionCall(ctx, s, req, m.GetClientId(), m.GetDocumentId(), authwebhook.Read,
		func(o v1connect.YorkieServiceClient) relayFunc[api.GetRevisionRequest, api.GetRevisionResponse] {
			return o.GetRevision
		},
		func(rt routing.Route) (*api.GetRevisionResponse, error) {
			rev, err := s.backend.GetRevision(ctx, rt.Project, m.GetClientId(), m.GetDocumentId(), m.GetRevisionId())
			if err != nil {
				return nil, err
			}
			return &api.GetRevisionResponse{Revision: RevisionSummary(rev)}, nil
		})
}

// RestoreRevision brings the document back to a revision's content with a
// change every attached client pulls.
func (s *Service) RestoreRevision(ctx context.Context, req *connect.Request[api.RestoreRevisionRequest]) (*connect.Response[api.RestoreRevisionResponse], error) {
	m := req.Msg
	if m.GetRevisionId() == "" {
		return nil, errinfo.InvalidArgument(errors.New("revision_id is required"))
	}
	return revisionCall(ctx, s, req, m.GetClientId(), m.GetDocumentId(), authwebhook.ReadWrite,
		func(o v1connect.YorkieServiceClient) relayFunc[api.RestoreRevisionRequest, api.RestoreRevisionResponse] {
			return o.RestoreRevision
		},
		func(rt routing.Route) (*api.RestoreRevisionResponse, error) {
			if err := s.backend.RestoreRevision(ctx, rt.Project, rt.Epoch, m.GetClientId(), m.GetDocumentId(), m.GetRevisionId()); err != nil {
				return nil, err
			}
			return &api.RestoreRevisionResponse{}, nil
		})
}

// RestoreRevisionAsOperator restores a revision of the project's document
// (docID, named key) for an operator: served here when this node owns the
// document, else relayed to its owner (in redirect mode too) as a
// RestoreRevision without a client. Its errors are the backend's, or a
// Connect error the owner answered.
func (s *Service) RestoreRevisionAsOperator(ctx context.Context, p *database.ProjectInfo, docID, key, revisionID string) error {
	h := http.Header{}
	h.Set(HeaderAPIKey, p.PublicKey)
	call := routing.DocumentCall{Kind: routing.CallAdmin, Project: p, DocumentID: docID, DocumentKey: key, Header: h}
	msg := &api.RestoreRevisionRequest{DocumentId: docID, RevisionId: revisionID}
	for attempt := 0; ; attempt++ {
		rt, err := s.route(ctx, call)
		if err != nil {
			return err
		}
		if rt.Owner != nil {
			_, err := relay(ctx, s, "RestoreRevisionByAdmin", call, rt, rt.Owner.RestoreRevision, msg)
			return err
		}
		err = s.backend.RestoreRevision(ctx, rt.Project, rt.Epoch, "", docID, revisionID)
		if errors.Is(err, backend.ErrStaleRoute) && attempt == 0 {
			continue
		}
		return err
	}
}
