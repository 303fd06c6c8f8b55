package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// Error codes of UpdateDocument, as upstream names them.
const (
	CodeInvalidSchemaKey = "ErrInvalidSchemaKey"
)

// documentUpdater is the owner side of UpdateDocument (rpc.AdminOwners).
type documentUpdater interface {
	UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u backend.DocumentUpdate) (*api.DocumentSummary, error)
}

// UpdateDocument sets members of a document's root from YSON and/or
// attaches, replaces or detaches its schema, as upstream: a root without a
// schema key updates the root; a schema key without a root changes the
// schema; both do both; neither detaches the schema. A schema change is
// refused while clients are attached, and any update whose result breaks
// the rules of the schema the document ends with is refused; a refused
// update changes nothing.
func (s *Service) UpdateDocument(ctx context.Context, req *connect.Request[api.UpdateDocumentRequest]) (*connect.Response[api.UpdateDocumentResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	m := req.Msg
	u := backend.DocumentUpdate{SetSchema: m.GetSchemaKey() != "" || m.GetRoot() == "", SchemaKey: m.GetSchemaKey()}
	if m.GetRoot() != "" {
		if u.Root, err = yson.ParseObject(m.GetRoot()); err != nil {
			return nil, invalidArgument(err)
		}
	}
	if u.SchemaKey != "" {
		if _, _, err := database.ParseSchemaKey(u.SchemaKey); err != nil {
			return nil, newError(connect.CodeInvalidArgument, CodeInvalidSchemaKey, err)
		}
	}
	doc, err := s.liveDocument(ctx, p, m.GetDocumentKey())
	if err != nil {
		return nil, err
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	up, ok := o.(documentUpdater)
	if !ok {
		return nil, newError(connect.CodeUnimplemented, CodeUnimplemented, errors.New("this node does not update documents"))
	}
	sum, err := up.UpdateDocument(ctx, p, doc, u)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	sum.Id, sum.Key = doc.ID, doc.Key
	sum.CreatedAt = timestamppb.New(doc.CreatedAt)
	return connect.NewResponse(&api.UpdateDocumentResponse{Document: sum}), nil
}
