package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Channels (presence-only rooms with broadcast) and document revisions are
// not served yet. These methods answer unimplemented with an ErrorInfo, like
// every other error of the service, so clients see a uniform error shape.

var (
	errChannels  = errors.New("channels are not supported by this server")
	errRevisions = errors.New("document revisions are not supported by this server")
)

// unimplemented builds the error of an RPC this server does not serve.
func unimplemented(err error) *connect.Error {
	return newError(connect.CodeUnimplemented, CodeUnimplemented, err)
}

// WatchChannel is not supported.
func (s *Service) WatchChannel(context.Context, *connect.Request[api.WatchChannelRequest], *connect.ServerStream[api.WatchChannelResponse]) error {
	return unimplemented(errChannels)
}

// AttachChannel is not supported.
func (s *Service) AttachChannel(context.Context, *connect.Request[api.AttachChannelRequest]) (*connect.Response[api.AttachChannelResponse], error) {
	return nil, unimplemented(errChannels)
}

// DetachChannel is not supported.
func (s *Service) DetachChannel(context.Context, *connect.Request[api.DetachChannelRequest]) (*connect.Response[api.DetachChannelResponse], error) {
	return nil, unimplemented(errChannels)
}

// RefreshChannel is not supported.
func (s *Service) RefreshChannel(context.Context, *connect.Request[api.RefreshChannelRequest]) (*connect.Response[api.RefreshChannelResponse], error) {
	return nil, unimplemented(errChannels)
}

// Broadcast is not supported.
func (s *Service) Broadcast(context.Context, *connect.Request[api.BroadcastRequest]) (*connect.Response[api.BroadcastResponse], error) {
	return nil, unimplemented(errChannels)
}

// CreateRevision is not supported.
func (s *Service) CreateRevision(context.Context, *connect.Request[api.CreateRevisionRequest]) (*connect.Response[api.CreateRevisionResponse], error) {
	return nil, unimplemented(errRevisions)
}

// GetRevision is not supported.
func (s *Service) GetRevision(context.Context, *connect.Request[api.GetRevisionRequest]) (*connect.Response[api.GetRevisionResponse], error) {
	return nil, unimplemented(errRevisions)
}

// ListRevisions is not supported.
func (s *Service) ListRevisions(context.Context, *connect.Request[api.ListRevisionsRequest]) (*connect.Response[api.ListRevisionsResponse], error) {
	return nil, unimplemented(errRevisions)
}

// RestoreRevision is not supported.
func (s *Service) RestoreRevision(context.Context, *connect.Request[api.RestoreRevisionRequest]) (*connect.Response[api.RestoreRevisionResponse], error) {
	return nil, unimplemented(errRevisions)
}
