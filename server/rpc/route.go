package rpc

import (
	"context"
	"errors"
	"net/http"
	"syscall"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
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

// stamp puts the owner's session key in response headers; h is nil for a
// detached stream whose head went out already.
func (s *Service) stamp(h http.Header, rt routing.Route) {
	if rt.SessionKey != "" && h != nil {
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
