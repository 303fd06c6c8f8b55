package admin

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Bounds of the channel calls, as upstream's.
const (
	// MaxChannelLimit bounds ListChannels' limit.
	MaxChannelLimit = 100
	// MaxGetChannels bounds the keys of one GetChannels.
	MaxGetChannels = 100
)

// ListChannels lists, in key order, up to limit (1 to MaxChannelLimit) of
// the project's channels with sessions whose keys start with query, each
// with its own sessions; every node of a cluster lists those it serves.
func (s *Service) ListChannels(ctx context.Context, req *connect.Request[api.ListChannelsRequest]) (*connect.Response[api.ListChannelsResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if n := req.Msg.Limit; n <= 0 || n > MaxChannelLimit {
		return nil, invalidArgument(fmt.Errorf("limit %d: want 1 to %d", n, MaxChannelLimit))
	}
	if len(req.Msg.Query) > 120 {
		return nil, invalidArgument(fmt.Errorf("query of %d bytes: want at most 120", len(req.Msg.Query)))
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	list, err := o.ListChannels(ctx, p, req.Msg.Query, int(req.Msg.Limit))
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	return connect.NewResponse(&api.ListChannelsResponse{Channels: list}), nil
}

// GetChannels returns each channel's session count (its own sessions, or
// with include_sub_path its sub-channels' too) from the owner of its group,
// in the keys' order; a channel with no sessions counts 0.
func (s *Service) GetChannels(ctx context.Context, req *connect.Request[api.GetChannelsRequest]) (*connect.Response[api.GetChannelsResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if n := len(req.Msg.ChannelKeys); n > MaxGetChannels {
		return nil, invalidArgument(fmt.Errorf("%d channel keys: want at most %d", n, MaxGetChannels))
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	list, err := o.GetChannels(ctx, p, req.Msg.ChannelKeys, req.Msg.IncludeSubPath)
	if err != nil {
		return nil, s.docError(ctx, err)
	}
	return connect.NewResponse(&api.GetChannelsResponse{Channels: list}), nil
}

// BroadcastByAdmin hands topic and payload to every watcher of the channel
// (not of its parents or sub-channels), at the owner of its group.
func (s *Service) BroadcastByAdmin(ctx context.Context, req *connect.Request[api.BroadcastByAdminRequest]) (*connect.Response[api.BroadcastByAdminResponse], error) {
	p, err := s.keyProject(ctx, req.Header())
	if err != nil {
		return nil, err
	}
	if req.Msg.Topic == "" {
		return nil, invalidArgument(errors.New("no topic"))
	}
	o, err := s.owners()
	if err != nil {
		return nil, err
	}
	if err := o.Broadcast(ctx, p, req.Msg.ChannelKey, req.Msg.Topic, req.Msg.Payload); err != nil {
		return nil, s.docError(ctx, err)
	}
	return connect.NewResponse(&api.BroadcastByAdminResponse{}), nil
}
