package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// HeaderAPIKey carries the public key of the caller's project, as the SDKs
// send it.
const HeaderAPIKey = "x-api-key"

// projectInterceptor resolves the project of every YorkieService call from
// its API key and puts it in the call's context, before any handler runs.
type projectInterceptor struct {
	projects *project.Resolver
}

// resolve returns ctx carrying the project of h's API key.
func (p projectInterceptor) resolve(ctx context.Context, h http.Header) (context.Context, error) {
	info, err := p.projects.Resolve(ctx, h.Get(HeaderAPIKey))
	switch {
	case errors.Is(err, project.ErrAPIKeyRequired):
		return nil, errinfo.New(connect.CodeUnauthenticated, errinfo.CodeUnauthenticated, err)
	case errors.Is(err, project.ErrUnknownAPIKey):
		return nil, errinfo.New(connect.CodeNotFound, errinfo.CodeProjectNotFound, err)
	case err != nil:
		return nil, errinfo.New(connect.CodeUnavailable, errinfo.CodeUnavailable, fmt.Errorf("resolve project: %w", err))
	}
	if err := checkOrigin(info, h.Get("Origin")); err != nil {
		return nil, err
	}
	return project.NewContext(ctx, info), nil
}

// WrapUnary resolves the project of unary calls.
func (p projectInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, err := p.resolve(ctx, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

// WrapStreamingClient leaves client streams alone: this is a server interceptor.
func (p projectInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler resolves the project of streams (Watch).
func (p projectInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := p.resolve(ctx, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// forwardedHeaders are the request headers a relay to the owner carries on,
// so that the owner resolves the same project.
var forwardedHeaders = []string{HeaderAPIKey}

// copyCallHeaders copies the forwarded headers of the client's call into the
// relayed request's.
func copyCallHeaders(dst, src http.Header) {
	for _, name := range forwardedHeaders {
		if v := src.Values(name); len(v) > 0 {
			dst[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
		}
	}
}

// relayRequest is the request relaying the client's call with msg to the
// owner.
func relayRequest[T any](msg *T, call routing.DocumentCall) *connect.Request[T] {
	req := connect.NewRequest(msg)
	copyCallHeaders(req.Header(), call.Header)
	return req
}

// scopedKey is the key of a channel of project p in the channel manager,
// which holds every project's channels.
func scopedKey(p *database.ProjectInfo, key string) (string, error) {
	if p == nil || p.ID == "" {
		return "", project.ErrMissing
	}
	return project.ScopedKey(p.ID, key), nil
}
