package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Drainer drains a node of the cluster (see server.Server.Drain): node is
// its advertised host:port, "" the node serving the call. It returns the
// node drained and the documents it still owns.
type Drainer interface {
	DrainNode(ctx context.Context, node string) (drained string, left int, err error)
}

// Sentinels a Drainer wraps: the node named is not a live member, or the
// server joined no cluster (its routing is staged by a test).
var (
	ErrUnknownNode  = errors.New("no live member at that address")
	ErrNotClustered = errors.New("this server is in no cluster")
)

// errNotServerAdmin refuses a node-wide call to any account but the
// server's admin account.
var errNotServerAdmin = errors.New("only the server's admin account may drain a node")

// DrainNode hands every document a node owns on to its next owner, as a
// SIGTERM does before the node exits, and answers once it is done (or its
// bound, --shutdown-drain-timeout, ran out). The node reports draining on
// /healthz from then on and keeps relaying the calls that reach it; the
// operator stops it afterwards. Only the server's admin account may call it:
// it acts on the cluster, not on a project.
func (s *Service) DrainNode(ctx context.Context, req *connect.Request[api.DrainNodeRequest]) (*connect.Response[api.DrainNodeResponse], error) {
	caller, err := s.Authorize(ctx, req.Header(), NeedUser())
	if err != nil {
		return nil, err
	}
	if caller.User == nil || caller.User.Username != s.cfg.User {
		return nil, newError(connect.CodePermissionDenied, CodePermissionDenied, errNotServerAdmin)
	}
	if s.cfg.Drainer == nil {
		return nil, newError(connect.CodeUnimplemented, CodeUnimplemented, errors.New("drain is not served here"))
	}
	node, left, err := s.cfg.Drainer.DrainNode(ctx, req.Msg.GetNode())
	switch {
	case errors.Is(err, ErrUnknownNode):
		return nil, invalidArgument(err)
	case errors.Is(err, ErrNotClustered):
		return nil, newError(connect.CodeUnimplemented, CodeUnimplemented, err)
	case err != nil:
		return nil, s.documentError(ctx, err)
	}
	s.logger.InfoContext(ctx, "node drained", "node", node, "documents_left", left, "by", caller.User.Username)
	return connect.NewResponse(&api.DrainNodeResponse{Node: node, DocumentsLeft: int32(left)}), nil
}
