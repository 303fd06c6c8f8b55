package clustersvc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
)

// The successor's side of a draining node's handoff (see server.Drain).

// WarmDocument builds a document a draining node is about to hand to this
// node. It needs no binding here: the copy only serves once a call routed
// here with the new owner epoch has claimed the document.
func (c *Service) WarmDocument(ctx context.Context, req *connect.Request[clusterv1.WarmDocumentRequest]) (*connect.Response[clusterv1.WarmDocumentResponse], error) {
	m := req.Msg
	if err := validate.DocumentID(m.GetDocumentId()); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	p, err := c.cfg.FindProject(ctx, m.GetProjectId())
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	seq, err := c.cfg.Backend.WarmDocument(ctx, p, m.GetDocumentId())
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&clusterv1.WarmDocumentResponse{ServerSeq: seq}), nil
}

// ImportChannelSessions takes the sessions of a channel group whose binding
// a draining node moved here. Every session must be of the group, which
// this node must own; a malformed one refuses the whole call.
func (c *Service) ImportChannelSessions(ctx context.Context, req *connect.Request[clusterv1.ImportChannelSessionsRequest]) (*connect.Response[clusterv1.ImportChannelSessionsResponse], error) {
	if c.cfg.Channels == nil {
		return nil, errinfo.New(connect.CodeUnimplemented, errinfo.CodeUnimplemented, errors.New("channels are not served here"))
	}
	m := req.Msg
	group := m.GetChannelGroup()
	if err := channel.ValidateKey(group); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	if channel.FirstKeyPath(group) != group {
		return nil, errinfo.InvalidArgument(fmt.Errorf("channel group %q is not a first key path", group))
	}
	sessions := make([]channel.HandedSession, 0, len(m.GetSessions()))
	for _, s := range m.GetSessions() {
		if err := channel.ValidateKey(s.GetChannelKey()); err != nil {
			return nil, errinfo.ToConnect(err)
		}
		if channel.FirstKeyPath(s.GetChannelKey()) != group {
			return nil, errinfo.InvalidArgument(fmt.Errorf("channel %q is not of group %q", s.GetChannelKey(), group))
		}
		if err := validate.ClientID(s.GetClientId()); err != nil {
			return nil, errinfo.InvalidArgument(err)
		}
		sessions = append(sessions, channel.HandedSession{
			ID: s.GetSessionId(), Key: project.ScopedKey(m.GetProjectId(), s.GetChannelKey()), Client: s.GetClientId(),
			Age: time.Duration(s.GetAgeMs()) * time.Millisecond, TTL: time.Duration(s.GetTtlMs()) * time.Millisecond,
		})
	}
	if _, err := c.ownedHere(ctx, m.GetProjectId(), channel.RoutingKey(group), req.Header()); err != nil {
		return nil, err
	}
	n, err := c.cfg.Channels.Import(sessions)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&clusterv1.ImportChannelSessionsResponse{Imported: int32(n)}), nil
}
