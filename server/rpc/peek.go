package rpc

import (
	"context"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
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
	procedure := req.Spec().Procedure
	key := req.Msg.GetChannelKey()
	if err := channel.ValidateKey(key); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	call := routing.DocumentCall{Kind: routing.CallChannel, Project: project.FromContext(ctx), DocumentKey: channel.RoutingKey(key), Header: req.Header()}
	rt, err := s.route(ctx, call)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	if err := s.authorize(ctx, call.Project, procedure, req.Header(), oneKey(key, authwebhook.Read)); err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	if rt.Owner != nil {
		return relay(ctx, s, procedure, call, rt, rt.Owner.PeekChannel, req.Msg)
	}
	scoped, err := scopedKey(rt.Project, key)
	if err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	out := connect.NewResponse(&api.PeekChannelResponse{SessionCount: s.channels.Count(scoped)})
	s.stamp(out.Header(), rt)
	return out, nil
}
