package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// Error codes of UpdateDocument, as upstream names them.
const (
	CodeInvalidSchemaKey = "ErrInvalidSchemaKey"
)

// DocumentUpdate is an admin's UpdateDocument as the document's owner gets
// it: the root's members as YSON (empty: the root stays) and, when
// SetSchema, the schema key to bind ("" detaches the schema). The root is
// sent as text so that a node relaying it to the owner sends what it got.
type DocumentUpdate struct {
	Root      string
	SetSchema bool
	SchemaKey string
}

// documentUpdater is the owner side of UpdateDocument (adminowner.Owners).
type documentUpdater interface {
	UpdateDocument(ctx context.Context, p *database.ProjectInfo, doc *database.DocInfo, u DocumentUpdate) (*api.DocumentSummary, error)
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
	u := DocumentUpdate{Root: m.GetRoot(), SetSchema: m.GetSchemaKey() != "" || m.GetRoot() == "", SchemaKey: m.GetSchemaKey()}
	if u.Root != "" {
		// Checked here too, so a malformed root is refused before any
		// owner is looked for.
		if _, err := yson.ParseObject(u.Root); err != nil {
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
