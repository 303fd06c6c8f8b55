package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Document revisions are not served yet. These methods answer unimplemented with an ErrorInfo, like
// every other error of the service, so clients see a uniform error shape.

var (
	errRevisions = errors.New("document revisions are not supported by this server")
)

// unimplemented builds the error of an RPC this server does not serve.
func unimplemented(err error) *connect.Error {
	return newError(connect.CodeUnimplemented, CodeUnimplemented, err)
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
