package rpc

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// maxWatchMoves bounds how often in a row one Watch stream follows its
// document to another owner without getting a message from it (an owner
// that crashed refuses until its lease runs out); the stream then ends and
// the client reconnects.
const maxWatchMoves = 3

// followWatch serves a single-document Watch stream here (local) or at the
// owner (relay). When the stream ends because the document moved (its owner
// handed it on while draining, is shutting down, or lost the binding) and
// this node is not itself going, it routes the call again and carries on at
// the new owner without ending the client's stream. The client then gets the
// new owner's initialization, which the SDK applies like a first one, and
// one DOCUMENT_CHANGED event (changed), so it pulls whatever was written
// while the stream moved: no remote change waits for the client's own
// next edit. A channel stream (changed nil) just carries on.
func followWatch[Res any](ctx context.Context, s *Service, procedure string, call routing.DocumentCall, rt routing.Route, changed *Res,
	relay func(owner v1connect.YorkieServiceClient) ownerStream[Res], local func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) error,
	header http.Header, send func(*Res) error,
) error {
	out := send
	for moves := 0; ; moves++ {
		sent := false
		counted := func(m *Res) error {
			sent = true
			return out(m)
		}
		var err error
		if rt.Owner != nil {
			err = relayStream(ctx, s, procedure, call, rt, relay(rt.Owner), header, counted)
		} else {
			s.stamp(header, rt)
			err = local(ctx, procedure, rt, counted)
		}
		if sent {
			moves = 0
		}
		if moves >= maxWatchMoves || !s.watchMoved(ctx, err) {
			return err
		}
		next, rerr := s.route(ctx, call)
		if rerr != nil {
			return err
		}
		s.logger.DebugContext(ctx, "watch stream follows its document", "procedure", procedure, "after", err, "owner", next.SessionKey)
		rt = next
		if changed != nil {
			out = thenSend(send, changed)
		}
	}
}

// watchMoved reports whether a Watch stream that ended with err may go on at
// the document's next owner: the client is still there, this node is not
// shutting down, and the stream ended for a reason a new owner cures.
func (s *Service) watchMoved(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	select {
	case <-s.closing:
		return false
	default:
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnavailable {
		return false
	}
	switch errinfo.Name(ce) {
	case errinfo.CodeUnavailable, errinfo.CodeShuttingDown, errinfo.CodeWrongNode:
		return true
	}
	return false
}

// thenSend sends through send, and after the first message also extra.
func thenSend[Res any](send func(*Res) error, extra *Res) func(*Res) error {
	first := true
	return func(m *Res) error {
		if err := send(m); err != nil {
			return err
		}
		if first {
			first = false
			return send(extra)
		}
		return nil
	}
}

// staleServe reports whether a call served here failed because this node's
// route went stale while it ran, so that routing it again is safe and costs
// the client no error: the binding was older than the document's claim
// (backend.ErrStaleRoute), or, for a PushPull, a newer owner claimed the
// document in the middle of the call (a handoff or takeover) and fenced its
// writes. The next owner drops the changes of the PushPull it already has.
func staleServe(call routing.DocumentCall, err error) bool {
	if errors.Is(err, backend.ErrStaleRoute) {
		return true
	}
	return call.Kind == routing.CallPushPull && errors.Is(err, database.ErrFenced)
}

// watchChannel serves a Watch of one channel (the JS SDK's channel stream)
// as a single-document Watch is served: here or relayed from the owner of
// the channel's group, following the group to its next owner when it moves
// (a draining owner hands the group's sessions on first, so the stream's
// new initialization carries the same count).
func (s *Service) watchChannel(ctx context.Context, req *connect.Request[api.WatchRequest], stream *connect.ServerStream[api.WatchResponse], key string) error {
	if err := channel.ValidateKey(key); err != nil {
		return errinfo.ToConnect(err)
	}
	clientID := req.Msg.GetClientId()
	call := routing.DocumentCall{Kind: routing.CallWatchChannel, Project: project.FromContext(ctx), ClientID: clientID, DocumentKey: channel.RoutingKey(key), Header: req.Header()}
	return serveWatchStream(ctx, s, req, stream, call, nil, func(owner v1connect.YorkieServiceClient) ownerStream[api.WatchResponse] {
		return func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
			return owner.Watch(ctx, relayRequest(req.Msg, call))
		}
	}, func(ctx context.Context, procedure string, rt routing.Route, send func(*api.WatchResponse) error) error {
		w, err := s.openChannelWatch(ctx, rt.Project, clientID, key)
		if err != nil {
			return s.failRouted(ctx, procedure, rt, err)
		}
		defer w.Close()
		defer s.upstream.WatchOpened(rt.Project)()
		c, _ := w.LatestCount()
		if err := send(&api.WatchResponse{Body: &api.WatchResponse_Initialization{
			Initialization: &api.WatchInitialization{ResourceInits: []*api.ResourceInit{{
				Init: &api.ResourceInit_ChannelInit{ChannelInit: &api.ChannelInit{ChannelKey: key, SessionCount: c.Sessions, Seq: c.Seq}},
			}}},
		}}); err != nil {
			return s.streamEnded(ctx, procedure, err)
		}
		defer announceLater(w)()
		err = s.pumpChannel(ctx, procedure, w, func(ev *api.ChannelEvent) error {
			return send(&api.WatchResponse{Body: &api.WatchResponse_Event{Event: &api.WatchEvent{Event: &api.WatchEvent_ChannelEvent{
				ChannelEvent: &api.ChannelWatchEvent{ChannelKey: key, Event: ev},
			}}}})
		})
		return s.endWatch(ctx, procedure, err)
	})
}
