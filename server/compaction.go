package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/routing"
)

// compactor serves the AdminService's compactions: the node that owns the
// document compacts it with its owner epoch; another node relays the call
// there, marked as forwarded, with the caller's credentials.
type compactor struct{ s *Server }

// CompactDocument implements admin.Compactor.
func (c compactor) CompactDocument(ctx context.Context, p *database.ProjectInfo, key string, force bool, header http.Header) (bool, error) {
	s := c.s
	info, err := s.db.FindDocumentByKey(ctx, p.ID, key)
	if err != nil {
		return false, err
	}
	rt, err := s.routes.Route(ctx, routing.DocumentCall{Kind: routing.CallAdmin, Project: p, DocumentKey: key, Header: header})
	if err != nil {
		return false, err
	}
	if rt.Owner != nil {
		return s.relayCompaction(ctx, rt, key, force, header)
	}
	return s.backend.CompactDocument(ctx, rt.Project, rt.Epoch, info.ID, force)
}

// relayCompaction asks the owner to compact the document.
func (s *Server) relayCompaction(ctx context.Context, rt routing.Route, key string, force bool, header http.Header) (bool, error) {
	if s.peers == nil || rt.Addr == "" {
		return false, fmt.Errorf("compact document %q: the owner is another node: %w", key, routing.ErrOwnerUnreachable)
	}
	req := connect.NewRequest(&api.CompactDocumentByAdminRequest{DocumentKey: key, Force: force})
	req.Header().Set("Authorization", header.Get("Authorization"))
	res, err := s.peers.Admin(rt.Addr).CompactDocumentByAdmin(ctx, req)
	if err != nil {
		return false, err
	}
	return res.Msg.Compacted, nil
}

// compactIdle compacts a document housekeeping found long, at its owner,
// unless a client has it attached.
func (s *Server) compactIdle(ctx context.Context, d *database.DocInfo) (bool, error) {
	p, err := s.db.FindProjectByID(ctx, d.ProjectID)
	if err != nil {
		return false, fmt.Errorf("project %s: %w", d.ProjectID, err)
	}
	// A relay to the owner authenticates with the project's secret key.
	h := http.Header{}
	h.Set("Authorization", "API-Key "+p.SecretKey)
	compacted, err := compactor{s}.CompactDocument(ctx, p, d.Key, false, h)
	if errors.Is(err, backend.ErrDocumentAttached) || connect.CodeOf(err) == connect.CodeFailedPrecondition {
		return false, fmt.Errorf("%w: %w", housekeeping.ErrSkipCompaction, err)
	}
	return compacted, err
}
