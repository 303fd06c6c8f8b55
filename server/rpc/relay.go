package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// The relay to the owner: a node that does not own a call's document sends
// the same call on to the owner's YorkieService (forward mode, and every
// attach and operator's call in redirect mode) and passes the answer back
// with the owner's session key. The handlers choose between serving on the
// route and relaying in one loop (routedCall, followWatch), which routes
// again (reroute) when the owner did nothing with the call.

// relayFailed hands the owner's answer back to the client. An error the
// owner returned keeps its code and details; a failure to reach the owner is
// unavailable, which clients retry.
func (s *Service) relayFailed(ctx context.Context, procedure string, rt routing.Route, err error) error {
	ce := errinfo.Remote(err, "relay to owner")
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
		case <-s.closing.Done():
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
	case <-s.closing.Done():
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

// ownerGone reports whether rt's owner has left the cluster.
func ownerGone(rt routing.Route) bool {
	select {
	case <-rt.OwnerGone: // a nil channel never fires
		return true
	default:
		return false
	}
}
