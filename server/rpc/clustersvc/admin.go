package clustersvc

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
)

// The owner's side of the AdminService's document and channel calls. A
// node that does not own the document or channel group refuses with
// ErrWrongNode rather than pass the call on: the caller asks again.

// ownedHere checks that this node owns key in the call's project and
// returns the route that serves it here (the project, the owner epoch).
func (c *Service) ownedHere(ctx context.Context, projectID, key string, h map[string][]string) (routing.Route, error) {
	p, err := c.cfg.FindProject(ctx, projectID)
	if err != nil {
		return routing.Route{}, errinfo.ToConnect(err)
	}
	rt, err := c.cfg.Router.Route(ctx, routing.DocumentCall{Kind: routing.CallAdmin, Project: p, DocumentKey: key, Header: h})
	if err != nil {
		return routing.Route{}, errinfo.ToConnect(errinfo.RouteError(err))
	}
	if rt.Owner != nil {
		return routing.Route{}, errinfo.WrongNode(c.cfg.Router.SessionKeyHeader(), rt.SessionKey, fmt.Errorf("%q is owned elsewhere", key))
	}
	return rt, nil
}

// adminDoc checks the document named by an admin call.
func adminDoc(docID, key string) error {
	if err := validate.DocumentID(docID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	if err := validate.DocumentKey(key); err != nil {
		return errinfo.InvalidArgument(err)
	}
	return nil
}

// GetDocumentSummary answers the owner's summary of a document.
func (c *Service) GetDocumentSummary(ctx context.Context, req *connect.Request[clusterv1.GetDocumentSummaryRequest]) (*connect.Response[clusterv1.GetDocumentSummaryResponse], error) {
	m := req.Msg
	if err := adminDoc(m.GetDocumentId(), m.GetDocumentKey()); err != nil {
		return nil, err
	}
	rt, err := c.ownedHere(ctx, m.GetProjectId(), m.GetDocumentKey(), req.Header())
	if err != nil {
		return nil, err
	}
	st, err := c.cfg.Owner.SummaryHere(ctx, rt.Project, rt.Epoch, m.GetDocumentId(), m.GetIncludeRoot(), m.GetIncludePresences())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&clusterv1.GetDocumentSummaryResponse{Document: st.Summary, ServerSeq: st.ServerSeq,
		GarbageLen: int32(st.GarbageLen), SnapshotServerSeq: st.SnapshotSeq}), nil
}

// RemoveDocumentByAdmin removes a document this node owns.
func (c *Service) RemoveDocumentByAdmin(ctx context.Context, req *connect.Request[clusterv1.RemoveDocumentByAdminRequest]) (*connect.Response[clusterv1.RemoveDocumentByAdminResponse], error) {
	m := req.Msg
	if err := adminDoc(m.GetDocumentId(), m.GetDocumentKey()); err != nil {
		return nil, err
	}
	rt, err := c.ownedHere(ctx, m.GetProjectId(), m.GetDocumentKey(), req.Header())
	if err != nil {
		return nil, err
	}
	if err := c.cfg.Owner.RemoveHere(ctx, rt.Project, rt.Epoch, m.GetDocumentId(), m.GetForce()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&clusterv1.RemoveDocumentByAdminResponse{}), nil
}

// ListChannels lists the project's channels this node holds.
func (c *Service) ListChannels(ctx context.Context, req *connect.Request[clusterv1.ListChannelsRequest]) (*connect.Response[clusterv1.ListChannelsResponse], error) {
	m := req.Msg
	list := c.cfg.Owner.ChannelsHere(m.GetProjectId(), m.GetQuery(), int(m.GetLimit()))
	return connect.NewResponse(&clusterv1.ListChannelsResponse{Channels: list}), nil
}

// GetChannels counts channels of a group this node owns.
func (c *Service) GetChannels(ctx context.Context, req *connect.Request[clusterv1.GetChannelsRequest]) (*connect.Response[clusterv1.GetChannelsResponse], error) {
	m := req.Msg
	if len(m.GetChannelKeys()) == 0 {
		return connect.NewResponse(&clusterv1.GetChannelsResponse{}), nil
	}
	group := channel.RoutingKey(m.GetChannelKeys()[0])
	for _, k := range m.GetChannelKeys() {
		if err := channel.ValidateKey(k); err != nil {
			return nil, errinfo.ToConnect(err)
		}
		if channel.RoutingKey(k) != group {
			return nil, errinfo.InvalidArgument(fmt.Errorf("channel %q is not of group %q", k, group))
		}
	}
	if _, err := c.ownedHere(ctx, m.GetProjectId(), group, req.Header()); err != nil {
		return nil, err
	}
	list := c.cfg.Owner.ChannelCountsHere(m.GetProjectId(), m.GetChannelKeys(), m.GetIncludeSubPath())
	return connect.NewResponse(&clusterv1.GetChannelsResponse{Channels: list}), nil
}

// BroadcastByAdmin broadcasts on a channel whose group this node owns.
func (c *Service) BroadcastByAdmin(ctx context.Context, req *connect.Request[clusterv1.BroadcastByAdminRequest]) (*connect.Response[clusterv1.BroadcastByAdminResponse], error) {
	m := req.Msg
	if err := channel.ValidateKey(m.GetChannelKey()); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	rt, err := c.ownedHere(ctx, m.GetProjectId(), channel.RoutingKey(m.GetChannelKey()), req.Header())
	if err != nil {
		return nil, err
	}
	if err := c.cfg.Owner.BroadcastHere(ctx, rt.Project.ID, m.GetChannelKey(), m.GetTopic(), m.GetPayload()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&clusterv1.BroadcastByAdminResponse{}), nil
}
