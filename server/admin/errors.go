package admin

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Error code names carried in the google.rpc.ErrorInfo metadata "code", as
// upstream names them.
const (
	CodeUnauthenticated    = "ErrUnauthenticated"
	CodeMismatchedPassword = "ErrMismatchedPassword"
	CodeUserAlreadyExists  = "ErrUserAlreadyExists"
	CodeProjectNotFound    = "ErrProjectNotFound"
	CodeProjectExists      = "ErrProjectAlreadyExists"
	CodeInvalidArgument    = "ErrInvalidArgument"
	CodeUnimplemented      = "ErrUnimplemented"
	CodeUnavailable        = "ErrUnavailable"
	CodeInternal           = "ErrInternal"
	codeDeadlineExceeded   = "ErrDeadlineExceeded"
	codeCanceled           = "ErrCanceled"
)

// newError builds a Connect error with an ErrorInfo naming the code.
func newError(code connect.Code, name string, err error) *connect.Error {
	return errinfo.New(code, name, err)
}

func unauthenticated(err error) *connect.Error {
	return newError(connect.CodeUnauthenticated, CodeUnauthenticated, err)
}

func invalidArgument(err error) *connect.Error {
	return newError(connect.CodeInvalidArgument, CodeInvalidArgument, err)
}

// toConnect maps a database error to what the caller gets; errors it does
// not know are logged and answered as internal, without their text.
func (s *Service) toConnect(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, database.ErrUserAlreadyExists):
		return newError(connect.CodeAlreadyExists, CodeUserAlreadyExists, err)
	case errors.Is(err, database.ErrProjectAlreadyExists):
		return newError(connect.CodeAlreadyExists, CodeProjectExists, err)
	case errors.Is(err, database.ErrProjectNotFound):
		return newError(connect.CodeNotFound, CodeProjectNotFound, err)
	case errors.Is(err, database.ErrMemberNotFound):
		return newError(connect.CodeNotFound, CodeMemberNotFound, err)
	case errors.Is(err, database.ErrInviteNotFound):
		return newError(connect.CodeNotFound, CodeInviteNotFound, err)
	case errors.Is(err, database.ErrUnavailable):
		return newError(connect.CodeUnavailable, CodeUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return newError(connect.CodeDeadlineExceeded, codeDeadlineExceeded, err)
	case errors.Is(err, context.Canceled):
		return newError(connect.CodeCanceled, codeCanceled, err)
	}
	s.logger.ErrorContext(ctx, "admin call failed", "error", err)
	return newError(connect.CodeInternal, CodeInternal, errors.New("internal error"))
}
