package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"syscall"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Router decides where document calls are served. routing.Router
// implements it; without one every call is served here.
type Router interface {
	// Route returns where call is served, or an error for the client; a
	// redirect is such an error (code unavailable naming the owner).
	Route(ctx context.Context, call routing.DocumentCall) (routing.Route, error)
	// RelayFailed tells the router that relaying a call to rt's owner
	// failed with err, so it can stop believing in that owner.
	RelayFailed(ctx context.Context, rt routing.Route, err error)
	// DetachRemote detaches the client of project p from the documents
	// other nodes own,
	// at their owners, and returns the owner epochs of the documents it has
	// attached here. DeactivateClient calls it before deactivating here.
	DetachRemote(ctx context.Context, p *database.ProjectInfo, clientID string) (map[string]int64, error)
	// SessionKeyHeader names the response header carrying the owner's key.
	SessionKeyHeader() string
}

// route is the single step every document call passes before it reaches the
// backend: it completes the call's document key and asks the router.
func (s *Service) route(ctx context.Context, call routing.DocumentCall) (routing.Route, error) {
	if s.router == nil {
		return routing.Route{Project: call.Project}, nil
	}
	if call.DocumentKey == "" {
		key, err := s.backend.DocumentKey(ctx, call.Project, call.DocumentID)
		if err != nil {
			// A client the server does not know (a restart lost its state)
			// must hear that first: the SDK then starts over, while a document
			// error would stop its sync without a word.
			if call.ClientID != "" {
				if cerr := s.backend.CheckClient(ctx, call.Project, call.ClientID); cerr != nil {
					err = cerr
				}
			}
			return routing.Route{}, err
		}
		call.DocumentKey = key
	}
	rt, err := s.router.Route(ctx, call)
	if err != nil {
		return routing.Route{}, errinfo.RouteError(err)
	}
	return rt, nil
}

// maxReroutes bounds how often one call is routed again after its owner
// turned out wrong or gone.
const maxReroutes = 2

// reroute decides, after attempt relays of call ended with err, whether the
// call is routed again and returns the new route. It is when the owner did
// nothing with the call: it refused it as not its own (ErrWrongNode: the
// binding moved) or as shutting down, or could not be reached at all. A
// PushPull is also sent again after any failure to reach its owner, which
// may have stored its changes: the next owner drops the changes it already
// has. So an ownership change, a drain or a crash costs the client no error
// in forward mode. The relay has made the router forget the failed owner.
func (s *Service) reroute(ctx context.Context, call routing.DocumentCall, attempt int, err error) (routing.Route, bool) {
	var ce *connect.Error
	if err == nil || attempt >= maxReroutes || ctx.Err() != nil || !errors.As(err, &ce) {
		return routing.Route{}, false
	}
	switch errinfo.Name(ce) {
	case errinfo.CodeWrongNode, errinfo.CodeShuttingDown:
	case errinfo.CodeUnavailable:
		if call.Kind != routing.CallPushPull && !errors.Is(err, syscall.ECONNREFUSED) {
			return routing.Route{}, false
		}
	default:
		return routing.Route{}, false
	}
	rt, rerr := s.route(ctx, call)
	if rerr != nil {
		return routing.Route{}, false
	}
	s.logger.DebugContext(ctx, "call routed again", "kind", call.Kind, "after", err)
	return rt, true
}

// stamp puts the owner's session key in response headers.
func (s *Service) stamp(h http.Header, rt routing.Route) {
	if rt.SessionKey != "" {
		h.Set(s.router.SessionKeyHeader(), rt.SessionKey)
	}
}

// failRouted maps err like fail and adds the owner's session key.
func (s *Service) failRouted(ctx context.Context, procedure string, rt routing.Route, err error) error {
	out := errinfo.ToConnect(err)
	var ce *connect.Error
	if errors.As(out, &ce) {
		s.stamp(ce.Meta(), rt)
	}
	return out
}

// relayFailed hands the owner's answer back to the client. An error the
// owner returned keeps its code and details; a failure to reach the owner is
// unavailable, which clients retry.
func (s *Service) relayFailed(ctx context.Context, procedure string, rt routing.Route, err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) || errinfo.Name(ce) == "" {
		// Every error the owner itself returns names a Yorkie code; one
		// without is the transport failing (the owner crashed mid-stream, a
		// refused connection), which the client must retry, not give up on.
		ce = errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, fmt.Errorf("relay to owner: %w", err))
	}
	s.router.RelayFailed(ctx, rt, ce)
	var badCert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &badCert):
		// Not a node going away: the nodes' TLS settings disagree, and no
		// retry will get past it.
		s.logger.ErrorContext(ctx, "relay to owner failed: its certificate does not verify (check --cluster-ca-file and the owner's --rpc-cert-file)",
			"procedure", procedure, "error", err)
	case ce.Code() == connect.CodeUnavailable || ce.Code() == connect.CodeUnknown:
		s.logger.DebugContext(ctx, "relay to owner failed", "procedure", procedure, "error", err)
	}
	s.stamp(ce.Meta(), rt)
	return ce
}

// relay sends a unary call to the owner and returns its answer with the
// owner's session key.
func relay[Req, Res any](ctx context.Context, s *Service, procedure string, call routing.DocumentCall, rt routing.Route,
	send func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), msg *Req,
) (*connect.Response[Res], error) {
	ctx, stop := whileOwnerLives(ctx, rt)
	defer stop()
	resp, err := send(ctx, relayRequest(msg, call))
	if err != nil {
		return nil, s.relayFailed(ctx, procedure, rt, err)
	}
	out := connect.NewResponse(resp.Msg)
	s.stamp(out.Header(), rt)
	return out, nil
}

// relayStream opens the stream at the owner and passes its messages on
// until either side ends it or the server shuts down.
func relayStream[Res any](ctx context.Context, s *Service, procedure string, call routing.DocumentCall, rt routing.Route,
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
		return s.relayFailed(ctx, procedure, rt, err)
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
		return errinfo.New(connect.CodeUnavailable, errinfo.CodeShuttingDown, fault.ErrShuttingDown)
	default:
	}
	if err := up.Err(); err != nil {
		if ctx.Err() != nil && !ownerGone(rt) {
			return nil // the client left
		}
		return s.relayFailed(ctx, procedure, rt, err)
	}
	return nil
}

// errOwnerGone ends relays to an owner that left the cluster.
var errOwnerGone = errors.New("the owner left the cluster")

// whileOwnerLives derives a context that ends when the owner leaves.
func whileOwnerLives(ctx context.Context, rt routing.Route) (context.Context, context.CancelFunc) {
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

func ownerGone(rt routing.Route) bool {
	select {
	case <-rt.OwnerGone: // a nil channel never fires
		return true
	default:
		return false
	}
}
