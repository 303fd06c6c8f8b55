package rpc

import (
	"context"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
)

// PeekChannel answers a channel's session count without a session: the
// caller is not counted and gets no broadcasts. It needs no client, so it
// is routed by the key alone and served from the owner's memory.
func (s *Service) PeekChannel(ctx context.Context, req *connect.Request[api.PeekChannelRequest]) (*connect.Response[api.PeekChannelResponse], error) {
	key := req.Msg.GetChannelKey()
	if err := channel.ValidateKey(key); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	call := routing.DocumentCall{Kind: routing.CallChannel, Project: project.FromContext(ctx), DocumentKey: channel.RoutingKey(key), Header: req.Header()}
	// Through routedCall, so a peek relayed to an owner that has just handed
	// the group on is routed again rather than answered ErrWrongNode.
	return routedCall(ctx, s, req, call, oneKey(key, authwebhook.Read),
		func(c v1connect.YorkieServiceClient) relayFunc[api.PeekChannelRequest, api.PeekChannelResponse] {
			return c.PeekChannel
		},
		func(rt routing.Route) (*api.PeekChannelResponse, error) {
			scoped, err := scopedKey(rt.Project, key)
			if err != nil {
				return nil, err
			}
			return &api.PeekChannelResponse{SessionCount: s.channels.Count(scoped)}, nil
		})
}
