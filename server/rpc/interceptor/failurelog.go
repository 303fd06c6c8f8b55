package interceptor

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
)

// FailureLogger is a connect.Interceptor that logs failed calls: server-side
// faults at error level, with the cause the client was not shown, client
// mistakes and expected conditions at debug. It is the only place a failed
// call is logged.
type FailureLogger struct {
	logger *slog.Logger
}

// NewFailureLogger returns the interceptor logging failed calls to logger.
func NewFailureLogger(logger *slog.Logger) *FailureLogger {
	return &FailureLogger{logger: logger}
}

// log reports one failed call.
func (l *FailureLogger) log(ctx context.Context, procedure string, start time.Time, err error) {
	if err == nil {
		return
	}
	code := connect.CodeOf(err)
	name := ""
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		name = errinfo.Name(cerr)
	}
	level := slog.LevelDebug
	switch code {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss:
		level = slog.LevelError
	case connect.CodeUnavailable:
		// Streams ending because their client left or the server hands the
		// document on are the normal course, not trouble.
		switch name {
		case errinfo.CodeClientNotActivated, errinfo.CodeDocumentNotAttached, errinfo.CodeShuttingDown, errinfo.CodeWrongNode:
		default:
			level = slog.LevelWarn
		}
	}
	if cause := errinfo.InternalCause(err); cause != nil {
		err = cause
	}
	l.logger.Log(ctx, level, "rpc failed",
		"procedure", procedure,
		"code", code.String(),
		"error_code", name,
		"duration", time.Since(start),
		"error", err)
}

// WrapUnary logs failed unary calls.
func (l *FailureLogger) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		if !req.Spec().IsClient {
			l.log(ctx, req.Spec().Procedure, start, err)
		}
		return resp, err
	}
}

// WrapStreamingClient leaves client streams alone: this is a server interceptor.
func (l *FailureLogger) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler logs server streams that end with an error.
func (l *FailureLogger) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		procedure := conn.Spec().Procedure
		return streamconn.Finish(ctx, next(ctx, conn), func(ctx context.Context, err error) {
			l.log(ctx, procedure, start, err)
		})
	}
}
