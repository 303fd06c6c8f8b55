package admin

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

// Error code names of document calls, as upstream names them.
const (
	CodeDocumentNotFound = "ErrDocumentNotFound"
	CodeDocumentAttached = "ErrDocumentAttached"
	CodeDocumentRemoved  = "ErrDocumentRemoved"
	codeNotCompactable   = "ErrDocumentNotCompactable"
)

// Compactor compacts a document at the node that owns it (see
// backend.Backend.CompactDocument). header is the call's, which a relay to
// the owner carries on.
type Compactor interface {
	CompactDocument(ctx context.Context, p *database.ProjectInfo, key string, force bool, header http.Header) (bool, error)
}

// CompactDocumentByAdmin replaces a document's history with one change
// that builds its content. Unless force, a document a client has attached
// is refused (failed_precondition, ErrDocumentAttached) and nothing
// changes; forced, the clients attached get the SDK's epoch-mismatch.
// compacted is false when there was nothing to compact.
//
// The project is the one whose secret key the call carries
// ("authorization: API-Key <secret key>", as upstream).
func (s *Service) CompactDocumentByAdmin(ctx context.Context, req *connect.Request[api.CompactDocumentByAdminRequest]) (*connect.Response[api.CompactDocumentByAdminResponse], error) {
	caller, err := s.Authorize(ctx, req.Header(), NeedProjectKey())
	if err != nil {
		return nil, err
	}
	p := caller.Project
	if req.Msg.DocumentKey == "" {
		return nil, invalidArgument(errors.New("no document_key"))
	}
	if s.cfg.Compactor == nil {
		return nil, newError(connect.CodeUnimplemented, CodeUnimplemented, errors.New("compaction is not served here"))
	}
	compacted, err := s.cfg.Compactor.CompactDocument(ctx, p, req.Msg.DocumentKey, req.Msg.Force, req.Header())
	if err != nil {
		return nil, s.documentError(ctx, err)
	}
	if compacted {
		s.logger.InfoContext(ctx, "document compacted", "project", p.ID, "key", req.Msg.DocumentKey, "force", req.Msg.Force)
	}
	return connect.NewResponse(&api.CompactDocumentByAdminResponse{Compacted: compacted}), nil
}

// documentError maps the error of a document call.
func (s *Service) documentError(ctx context.Context, err error) error {
	var cerr *connect.Error
	switch {
	case errors.As(err, &cerr):
		// The owner's answer, relayed.
		return cerr
	case errors.Is(err, database.ErrDocumentNotFound):
		return newError(connect.CodeNotFound, CodeDocumentNotFound, err)
	case errors.Is(err, backend.ErrDocumentAttached):
		return newError(connect.CodeFailedPrecondition, CodeDocumentAttached, err)
	case errors.Is(err, backend.ErrDocumentRemoved):
		return newError(connect.CodeFailedPrecondition, CodeDocumentRemoved, err)
	case errors.Is(err, backend.ErrCannotCompact):
		return newError(connect.CodeFailedPrecondition, codeNotCompactable, err)
	case errors.Is(err, fault.ErrShuttingDown), fault.IsRetryable(err):
		return newError(connect.CodeUnavailable, CodeUnavailable, err)
	}
	return s.toConnect(ctx, err)
}
