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
func followWatch[Res any](ctx context.Context, s *Service, procedure string, call routing.DocumentCall, rt routing.Route, changed func() *Res,
	relay openRelay[Res], local func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) error,
	header http.Header, send func(*Res) error,
) error {
	return newWatchFollow(s, procedure, call, rt, changed, relay, header, send).serve(ctx, local)
}

// serve serves the stream, at each owner by relaying it or by local.
func (f *watchFollow[Res]) serve(ctx context.Context, local func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) error) error {
	for {
		f.sent = false
		var err error
		if f.rt.Owner != nil {
			err = f.relayed(ctx)
		} else {
			f.s.stamp(f.header, f.rt)
			err = local(ctx, f.procedure, f.rt, f.counted)
		}
		if !f.moveOn(ctx, err) {
			return err
		}
	}
}

// watchFollow is where followWatch serves a Watch stream and what it sends
// there, kept between its steps.
type watchFollow[Res any] struct {
	s         *Service
	procedure string
	call      routing.DocumentCall
	rt        routing.Route
	changed   func() *Res // the extra CHANGED after a move; nil for a channel
	relay     openRelay[Res]
	header    http.Header
	send      func(*Res) error // the client's stream
	out       func(*Res) error // send, after a move with the extra CHANGED
	moves     int              // moves in a row without a message
	sent      bool             // the current owner sent a message

	// A detached stream's, between its steps.
	w           *docWatch   // the watch served here, nil while there is none
	stopClosing func() bool // stops the server's shutdown waking the stream
}

func newWatchFollow[Res any](s *Service, procedure string, call routing.DocumentCall, rt routing.Route, changed func() *Res,
	relay openRelay[Res], header http.Header, send func(*Res) error,
) *watchFollow[Res] {
	return &watchFollow[Res]{s: s, procedure: procedure, call: call, rt: rt, changed: changed, relay: relay, header: header, send: send, out: send}
}

// counted sends m, noting that the current owner sent something.
func (f *watchFollow[Res]) counted(m *Res) error {
	f.sent = true
	return f.out(m)
}

// relayed serves the stream at its owner until the owner's stream ends.
func (f *watchFollow[Res]) relayed(ctx context.Context) error {
	return relayStream(ctx, f.s, f.procedure, f.call, f.rt, f.relay(f.rt.Owner, f.call), f.header, f.counted)
}

// moveOn decides, after the stream ended at its current owner with err,
// whether it carries on at the document's next owner, and routes it there.
func (f *watchFollow[Res]) moveOn(ctx context.Context, err error) bool {
	if f.sent {
		f.moves = 0
	}
	if f.moves >= maxWatchMoves || !f.s.watchMoved(ctx, err) {
		return false
	}
	next, rerr := f.s.route(ctx, f.call)
	if rerr != nil {
		return false
	}
	f.s.logger.DebugContext(ctx, "watch stream follows its document", "procedure", f.procedure, "after", err, "owner", next.SessionKey)
	f.rt = next
	if f.changed != nil {
		f.out = thenSend(f.send, f.changed())
	}
	f.moves++
	return true
}

// openRelay opens the relayed stream of call at owner. It takes the call,
// not the client's request: a detached stream keeps only the headers a relay
// carries on.
type openRelay[Res any] func(owner v1connect.YorkieServiceClient, call routing.DocumentCall) ownerStream[Res]

// openLocal subscribes a document Watch served here and sends its
// initialization, leaving the events to come.
type openLocal[Res any] func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) (*docWatch, error)

// stepDetached does what a detached document Watch, woken by wake, has to
// now: set the stream up at its current owner (a relay runs whole), or hand
// its watch's queued events on, moving on when the stream ended there. It
// returns once the stream waits for more, with no goroutine left waiting:
// the subscription, the server's shutdown and the stream's end wake it.
// done reports the stream's end, with its error.
func (f *watchFollow[Res]) stepDetached(ctx context.Context, open openLocal[Res], wake func()) (bool, error) {
	if f.stopClosing == nil {
		f.stopClosing = context.AfterFunc(f.s.closing, wake)
	}
	for {
		var done bool
		var err error
		if f.w, done, err = f.step(ctx, f.w, open, wake); done {
			f.stopClosing()
			return true, err
		}
		if f.w != nil {
			return false, nil
		}
	}
}

// step sets the stream up at its current owner (a relay runs whole), with
// its subscription calling wake, or hands the watch's queued events on; when
// the stream ended there, it moves on or reports done with the stream's
// error.
func (f *watchFollow[Res]) step(ctx context.Context, w *docWatch, open openLocal[Res], wake func()) (*docWatch, bool, error) {
	var err error
	if w == nil {
		f.sent = false
		if f.rt.Owner != nil {
			err = f.relayed(ctx)
		} else {
			f.s.stamp(f.header, f.rt)
			if w, err = open(ctx, f.procedure, f.rt, f.counted); err == nil {
				// Events queued before this are taken below.
				w.sub.Notify(wake)
			}
		}
	}
	if w != nil {
		var more bool
		if more, err = w.pending(ctx); more {
			return w, false, nil
		}
		w.close()
	}
	return nil, !f.moveOn(ctx, err), err
}

// watchMoved reports whether a Watch stream that ended with err may go on at
// the document's next owner: the client is still there, this node is not
// shutting down, and the stream ended for a reason a new owner cures.
func (s *Service) watchMoved(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	select {
	case <-s.closing.Done():
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
	// The relay holds the message, not the request and its headers.
	msg := req.Msg
	return serveWatchStream(ctx, s, req, stream, call, nil, func(owner v1connect.YorkieServiceClient, call routing.DocumentCall) ownerStream[api.WatchResponse] {
		return func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
			return owner.Watch(ctx, relayRequest(msg, call))
		}
	}, func(ctx context.Context, procedure string, rt routing.Route, send func(*api.WatchResponse) error) error {
		w, err := s.openChannelWatch(ctx, rt, clientID, key)
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
	}, nil)
}

// routeHeaders keeps of a call's request headers those routing it again
// and relaying it read: the session key, the forwarding marks and the
// forwarded headers. A detached stream keeps them for its whole life.
func (s *Service) routeHeaders(h http.Header) http.Header {
	names := append([]string{routing.HeaderForwardedBy, routing.HeaderSecret}, forwardedHeaders...)
	if s.router != nil {
		names = append(names, s.router.SessionKeyHeader())
	}
	out := make(http.Header, len(names))
	for _, name := range names {
		if v := h.Values(name); len(v) > 0 {
			out[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
		}
	}
	return out
}
