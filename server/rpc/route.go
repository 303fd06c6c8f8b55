package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// CallKind names the kind of document call passing the routing step.
type CallKind int

// Document call kinds.
const (
	CallAttach CallKind = iota + 1
	CallDetach
	CallRemove
	CallPushPull
	CallWatch
	// CallAttachChannel, CallChannel (detach, refresh, broadcast) and
	// CallWatchChannel are channel calls: DocumentKey is the routing key of
	// the channel's group (channel.RoutingKey).
	CallAttachChannel
	CallChannel
	CallWatchChannel
)

// String returns the call kind's RPC-like name, for logs.
func (k CallKind) String() string {
	switch k {
	case CallAttach:
		return "attach"
	case CallDetach:
		return "detach"
	case CallRemove:
		return "remove"
	case CallPushPull:
		return "pushpull"
	case CallWatch:
		return "watch"
	case CallAttachChannel:
		return "attach-channel"
	case CallChannel:
		return "channel"
	case CallWatchChannel:
		return "watch-channel"
	}
	return fmt.Sprintf("CallKind(%d)", int(k))
}

// DocumentCall describes one document call to the routing step.
type DocumentCall struct {
	Kind     CallKind
	ClientID string
	// DocumentID is set on every call but AttachDocument.
	DocumentID string
	// DocumentKey is always set: from the attach pack, or looked up by ID.
	DocumentKey string
	// Header is the request's headers: a session key the client or a proxy
	// sent back, and the marks of a call another node forwarded.
	Header http.Header
}

// Route says where a document call is served.
type Route struct {
	// SessionKey names the owner; responses carry it in the router's
	// session key header. Empty when the router names no owner.
	SessionKey string
	// Owner, when set, is the owner's service: this node relays the call
	// there. Nil serves the call here.
	Owner v1connect.YorkieServiceClient
	// OwnerGone is closed when the owner leaves the cluster; a relay to it
	// then ends with unavailable instead of waiting on a node that froze.
	OwnerGone <-chan struct{}
}

// Router decides where document calls are served. The cluster layer
// implements it; without one every call is served here.
type Router interface {
	// Route returns where call is served, or an error for the client; a
	// redirect is such an error (code unavailable naming the owner).
	Route(ctx context.Context, call DocumentCall) (Route, error)
	// RelayFailed tells the router that relaying call to route's owner
	// failed with err, so it can stop believing in that owner.
	RelayFailed(ctx context.Context, call DocumentCall, err error)
	// DetachRemote detaches the client from the documents other nodes own,
	// at their owners. DeactivateClient calls it before deactivating here.
	DetachRemote(ctx context.Context, clientID string) error
	// SessionKeyHeader names the response header carrying the owner's key.
	SessionKeyHeader() string
}

// route is the single step every document call passes before it reaches the
// backend: it completes the call's document key and asks the router.
func (s *Service) route(ctx context.Context, call DocumentCall) (Route, error) {
	if s.router == nil {
		return Route{}, nil
	}
	if call.DocumentKey == "" {
		key, err := s.backend.DocumentKey(ctx, call.DocumentID)
		if err != nil {
			// A client the server does not know (a restart lost its state)
			// must hear that first: the SDK then starts over, while a document
			// error would stop its sync without a word.
			if cerr := s.backend.CheckClient(ctx, call.ClientID); cerr != nil {
				err = cerr
			}
			return Route{}, fmt.Errorf("route %s of document %s: %w", call.Kind, call.DocumentID, err)
		}
		call.DocumentKey = key
	}
	rt, err := s.router.Route(ctx, call)
	if err != nil {
		return Route{}, fmt.Errorf("route %s of document %q: %w", call.Kind, call.DocumentKey, err)
	}
	return rt, nil
}

// IsAttach reports whether the call creates an attachment: such a call must
// succeed wherever it lands, so even redirect mode hands it to the owner.
func (k CallKind) IsAttach() bool { return k == CallAttach || k == CallAttachChannel }

// stamp puts the owner's session key in response headers.
func (s *Service) stamp(h http.Header, rt Route) {
	if rt.SessionKey != "" {
		h.Set(s.router.SessionKeyHeader(), rt.SessionKey)
	}
}

// failRouted maps err like fail and adds the owner's session key.
func (s *Service) failRouted(ctx context.Context, procedure string, rt Route, err error) error {
	out := s.fail(ctx, procedure, err)
	var ce *connect.Error
	if errors.As(out, &ce) {
		s.stamp(ce.Meta(), rt)
	}
	return out
}

// relayFailed hands the owner's answer back to the client. An error the
// owner returned keeps its code and details; a failure to reach the owner is
// unavailable, which clients retry.
func (s *Service) relayFailed(ctx context.Context, procedure string, call DocumentCall, rt Route, err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) || errorName(ce) == "" {
		// Every error the owner itself returns names a Yorkie code; one
		// without is the transport failing (the owner crashed mid-stream, a
		// refused connection), which the client must retry, not give up on.
		ce = newError(connect.CodeUnavailable, CodeUnavailable, fmt.Errorf("relay to owner: %w", err))
	}
	s.router.RelayFailed(ctx, call, ce)
	if ce.Code() == connect.CodeUnavailable || ce.Code() == connect.CodeUnknown {
		s.logger.DebugContext(ctx, "relay to owner failed", "procedure", procedure, "error", err)
	}
	s.stamp(ce.Meta(), rt)
	return ce
}

// relay sends a unary call to the owner and returns its answer with the
// owner's session key.
func relay[Req, Res any](ctx context.Context, s *Service, procedure string, call DocumentCall, rt Route,
	send func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), msg *Req,
) (*connect.Response[Res], error) {
	ctx, stop := whileOwnerLives(ctx, rt)
	defer stop()
	resp, err := send(ctx, relayRequest(msg, call))
	if err != nil {
		return nil, s.relayFailed(ctx, procedure, call, rt, err)
	}
	out := connect.NewResponse(resp.Msg)
	s.stamp(out.Header(), rt)
	return out, nil
}

// relayStream opens the stream at the owner and passes its messages on
// until either side ends it or the server shuts down.
func relayStream[Res any](ctx context.Context, s *Service, procedure string, call DocumentCall, rt Route,
	open func(context.Context) (*connect.ServerStreamForClient[Res], error), header http.Header, send func(*Res) error,
) error {
	ctx, stop := whileOwnerLives(ctx, rt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	up, err := open(ctx)
	if err != nil {
		return s.relayFailed(ctx, procedure, call, rt, err)
	}
	defer up.Close()
	s.stamp(header, rt)
	for up.Receive() {
		if err := send(up.Msg()); err != nil {
			return s.streamEnded(ctx, procedure, err)
		}
	}
	select {
	case <-s.closing:
		return newError(connect.CodeUnavailable, CodeShuttingDown, ErrShuttingDown)
	default:
	}
	if err := up.Err(); err != nil {
		if ctx.Err() != nil && !ownerGone(rt) {
			return nil // the client left
		}
		return s.relayFailed(ctx, procedure, call, rt, err)
	}
	return nil
}

// errOwnerGone ends relays to an owner that left the cluster.
var errOwnerGone = errors.New("the owner left the cluster")

// whileOwnerLives derives a context that ends when the owner leaves.
func whileOwnerLives(ctx context.Context, rt Route) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if rt.OwnerGone == nil {
		return ctx, func() { cancel(nil) }
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-rt.OwnerGone:
			cancel(errOwnerGone)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

func ownerGone(rt Route) bool {
	select {
	case <-rt.OwnerGone: // a nil channel never fires
		return true
	default:
		return false
	}
}
