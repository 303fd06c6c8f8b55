package rpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
	"github.com/yorkie-affinity/yorkie/server/webhook/authwebhook"
)

// Channel calls are routed like document calls: every channel that shares a
// first key path (the SDK's x-shard-key is "<apiKey>/<first key path>") is
// served by the one node that owns the group's routing key, so its counts
// and broadcasts meet in one place.

// projectSessionTTL is the channel session TTL of the call's project (its
// channel_session_ttl, checked when set), 0 when it sets none: the
// server's --channel-session-ttl then applies.
func projectSessionTTL(ctx context.Context) time.Duration {
	p := project.FromContext(ctx)
	if p == nil || p.ChannelSessionTTL == "" {
		return 0
	}
	d, err := time.ParseDuration(p.ChannelSessionTTL)
	if err != nil {
		return 0
	}
	return d
}

// AttachChannel gives the client a session on the channel.
func (s *Service) AttachChannel(ctx context.Context, req *connect.Request[api.AttachChannelRequest]) (*connect.Response[api.AttachChannelResponse], error) {
	return channelCall(ctx, s, req, routing.CallAttachChannel, req.Msg.GetClientId(), req.Msg.GetChannelKey(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.AttachChannelRequest, api.AttachChannelResponse] {
			return o.AttachChannel
		},
		func(clientID, key string, held channel.Held) (*api.AttachChannelResponse, error) {
			id, n, err := s.channels.Attach(clientID, key, projectSessionTTL(ctx), held)
			return &api.AttachChannelResponse{SessionId: id, SessionCount: n}, err
		})
}

// DetachChannel ends the client's session on the channel.
func (s *Service) DetachChannel(ctx context.Context, req *connect.Request[api.DetachChannelRequest]) (*connect.Response[api.DetachChannelResponse], error) {
	return channelCall(ctx, s, req, routing.CallChannel, req.Msg.GetClientId(), req.Msg.GetChannelKey(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.DetachChannelRequest, api.DetachChannelResponse] {
			return o.DetachChannel
		},
		func(clientID, key string, held channel.Held) (*api.DetachChannelResponse, error) {
			n, err := s.channels.Detach(clientID, key, req.Msg.GetSessionId(), held)
			return &api.DetachChannelResponse{SessionCount: n}, err
		})
}

// RefreshChannel is the SDK's heartbeat: it keeps the session alive, and
// brings it back on a node that did not know it.
func (s *Service) RefreshChannel(ctx context.Context, req *connect.Request[api.RefreshChannelRequest]) (*connect.Response[api.RefreshChannelResponse], error) {
	return channelCall(ctx, s, req, routing.CallChannel, req.Msg.GetClientId(), req.Msg.GetChannelKey(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.RefreshChannelRequest, api.RefreshChannelResponse] {
			return o.RefreshChannel
		},
		func(clientID, key string, held channel.Held) (*api.RefreshChannelResponse, error) {
			n, err := s.channels.Refresh(clientID, key, req.Msg.GetSessionId(), projectSessionTTL(ctx), held)
			return &api.RefreshChannelResponse{SessionCount: n}, err
		})
}

// Broadcast hands the payload to the channel's other watchers; nothing is
// stored.
func (s *Service) Broadcast(ctx context.Context, req *connect.Request[api.BroadcastRequest]) (*connect.Response[api.BroadcastResponse], error) {
	// Checked before routing: an oversized payload is refused where it
	// arrives rather than carried to the owner.
	if err := channel.CheckBroadcastSize(req.Msg.GetTopic(), req.Msg.GetPayload(), s.channels.MaxPayloadBytes()); err != nil {
		return nil, errinfo.ToConnect(fmt.Errorf("broadcast on %q: %w", validate.Truncate(req.Msg.GetChannelKey()), err))
	}
	return channelCall(ctx, s, req, routing.CallChannel, req.Msg.GetClientId(), req.Msg.GetChannelKey(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.BroadcastRequest, api.BroadcastResponse] {
			return o.Broadcast
		},
		func(clientID, key string, _ channel.Held) (*api.BroadcastResponse, error) {
			// Not held to the binding: until a hand-off releases the group,
			// its watchers are all here.
			err := s.channels.Broadcast(clientID, key, req.Msg.GetTopic(), req.Msg.GetPayload())
			return &api.BroadcastResponse{}, err
		})
}

// channelCall serves a unary channel call: it validates the client and the
// key, routes the call to the group's owner, and there checks that the
// client is active before serve. A change serve refuses because the group
// moved meanwhile (channel.ErrMoved: a drain handed it on between the route
// and serve) is routed again, to the new owner, within the same call.
func channelCall[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], kind routing.CallKind,
	clientID, key string,
	method func(v1connect.YorkieServiceClient) relayFunc[Req, Res],
	serve func(clientID, key string, held channel.Held) (*Res, error),
) (*connect.Response[Res], error) {
	procedure := req.Spec().Procedure
	if err := validate.ClientID(clientID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	if err := channel.ValidateKey(key); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	call := routing.DocumentCall{Kind: kind, Project: project.FromContext(ctx), ClientID: clientID, DocumentKey: channel.RoutingKey(key), Header: req.Header()}
	rt, err := s.route(ctx, call)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	verb := authwebhook.ReadWrite
	if methodOf(procedure) == "Broadcast" {
		verb = authwebhook.Read
	}
	if err := s.authorize(ctx, call.Project, procedure, req.Header(), oneKey(key, verb)); err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	for attempt := 0; ; attempt++ {
		if rt.Owner != nil {
			resp, err := relay(ctx, s, procedure, call, rt, method(rt.Owner), req.Msg)
			next, ok := s.reroute(ctx, call, attempt, err)
			if !ok {
				return resp, err
			}
			rt = next
			continue
		}
		if err := s.backend.CheckClient(ctx, rt.Project, clientID); err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
		// The manager holds every project's channels: each under its scoped key.
		scoped, err := scopedKey(rt.Project, key)
		if err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
		resp, err := serve(clientID, scoped, rt.Held)
		if errors.Is(err, channel.ErrMoved) && attempt < maxReroutes {
			if rt, err = s.route(ctx, call); err != nil {
				return nil, errinfo.ToConnect(err)
			}
			s.logger.DebugContext(ctx, "channel call routed again", "kind", call.Kind, "after", channel.ErrMoved)
			continue
		}
		if err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
		out := connect.NewResponse(resp)
		s.stamp(out.Header(), rt)
		return out, nil
	}
}

// WatchChannel is the deprecated single-channel form of Watch.
func (s *Service) WatchChannel(ctx context.Context, req *connect.Request[api.WatchChannelRequest], stream *connect.ServerStream[api.WatchChannelResponse]) error {
	clientID, key := req.Msg.GetClientId(), req.Msg.GetChannelKey()
	if err := validate.ClientID(clientID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	if err := channel.ValidateKey(key); err != nil {
		return errinfo.ToConnect(err)
	}
	call := routing.DocumentCall{Kind: routing.CallWatchChannel, Project: project.FromContext(ctx), ClientID: clientID, DocumentKey: channel.RoutingKey(key), Header: req.Header()}
	// The relay holds the message, not the request and its headers.
	msg := req.Msg
	return serveWatchStream(ctx, s, req, stream, call, nil, func(owner v1connect.YorkieServiceClient, call routing.DocumentCall) ownerStream[api.WatchChannelResponse] {
		return func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchChannelResponse], error) {
			return owner.WatchChannel(ctx, relayRequest(msg, call))
		}
	}, func(ctx context.Context, procedure string, rt routing.Route, send func(*api.WatchChannelResponse) error) error {
		w, err := s.openChannelWatch(ctx, rt, clientID, key)
		if err != nil {
			return s.failRouted(ctx, procedure, rt, err)
		}
		defer w.Close()
		c, _ := w.LatestCount()
		if err := send(&api.WatchChannelResponse{Body: &api.WatchChannelResponse_Initialized{
			Initialized: &api.WatchChannelInitialized{SessionCount: c.Sessions, Seq: c.Seq},
		}}); err != nil {
			return s.streamEnded(ctx, procedure, err)
		}
		defer announceLater(w)()
		err = s.pumpChannel(ctx, procedure, w, func(ev *api.ChannelEvent) error {
			return send(&api.WatchChannelResponse{Body: &api.WatchChannelResponse_Event{Event: ev}})
		})
		return s.endWatch(ctx, procedure, err)
	}, nil)
}

// openChannelWatch subscribes an active client to a channel served here
// (rt). A group that moved since the route refuses it with channel.ErrMoved,
// which a single-resource stream follows to the new owner.
func (s *Service) openChannelWatch(ctx context.Context, rt routing.Route, clientID, key string) (*channel.Watcher, error) {
	if err := s.backend.CheckClient(ctx, rt.Project, clientID); err != nil {
		return nil, err
	}
	scoped, err := scopedKey(rt.Project, key)
	if err != nil {
		return nil, err
	}
	w, err := s.channels.Watch(clientID, scoped, rt.Held)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// presenceAnnounceDelay is how long after a channel stream's initialization
// the watcher's count is announced again (channel.Watcher.Announce): the SDK
// handles the initialization before attach() returns, so the count event
// must reach it after the caller had the chance to subscribe to 'presence',
// in a read of its own rather than in the chunk of the initialization.
const presenceAnnounceDelay = 100 * time.Millisecond

// announceLater announces w's count after presenceAnnounceDelay, unless
// the returned stop runs first.
func announceLater(w *channel.Watcher) (stop func()) {
	t := time.AfterFunc(presenceAnnounceDelay, w.Announce)
	return func() { t.Stop() }
}

// pumpChannel sends a watcher's counts and broadcasts until the client
// leaves (nil), the manager ends the watcher, or a send fails.
func (s *Service) pumpChannel(ctx context.Context, procedure string, w *channel.Watcher, send func(*api.ChannelEvent) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing.Done():
			return errinfo.New(connect.CodeUnavailable, errinfo.CodeShuttingDown, fault.ErrShuttingDown)
		case <-w.Done():
			return s.subscriptionEnded(ctx, procedure, w.Err())
		case <-w.Ready():
			msgs, c, changed := w.Take()
			if changed {
				if err := send(&api.ChannelEvent{
					Type: api.ChannelEvent_TYPE_PRESENCE, SessionCount: c.Sessions, Seq: c.Seq,
				}); err != nil {
					return streamSendFailed{err}
				}
			}
			for _, msg := range msgs {
				if err := send(&api.ChannelEvent{
					Type: api.ChannelEvent_TYPE_BROADCAST, Publisher: msg.Publisher, Topic: msg.Topic, Payload: msg.Payload,
				}); err != nil {
					return streamSendFailed{err}
				}
			}
		}
	}
}

// streamSendFailed marks an error of the client's own stream, as opposed
// to a reason the server ended it.
type streamSendFailed struct{ err error }

func (e streamSendFailed) Error() string { return e.err.Error() }
func (e streamSendFailed) Unwrap() error { return e.err }

// endWatch maps how an event loop ended to the stream's ending.
func (s *Service) endWatch(ctx context.Context, procedure string, err error) error {
	if sf, ok := err.(streamSendFailed); ok {
		return s.streamEnded(ctx, procedure, sf.err)
	}
	return err
}
