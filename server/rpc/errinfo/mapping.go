package errinfo

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/routing"
)

// Classify returns the Connect code and code name of a known sentinel error.
func Classify(err error) (connect.Code, string, bool) {
	switch {
	case errors.Is(err, database.ErrClientNotFound):
		return connect.CodeNotFound, CodeClientNotFound, true
	case errors.Is(err, backend.ErrClientNotActivated):
		return connect.CodeFailedPrecondition, CodeClientNotActivated, true
	case errors.Is(err, database.ErrDocumentNotFound):
		return connect.CodeNotFound, CodeDocumentNotFound, true
	case errors.Is(err, database.ErrRevisionNotFound):
		return connect.CodeNotFound, CodeRevisionNotFound, true
	case errors.Is(err, backend.ErrRevisionNotRestorable):
		return connect.CodeFailedPrecondition, CodeFailedPrecondition, true
	case errors.Is(err, backend.ErrDocumentNotAttached), errors.Is(err, database.ErrAttachmentNotFound):
		return connect.CodeFailedPrecondition, CodeDocumentNotAttached, true
	case errors.Is(err, backend.ErrDocumentRemoved):
		return connect.CodeFailedPrecondition, CodeDocumentRemoved, true
	case errors.Is(err, backend.ErrInvalidClientSeq):
		return connect.CodeInvalidArgument, CodeInvalidClientSeq, true
	case errors.Is(err, database.ErrSchemaNotFound):
		return connect.CodeNotFound, CodeSchemaNotFound, true
	case errors.Is(err, database.ErrInvalidSchemaKey):
		return connect.CodeInvalidArgument, CodeInvalidSchemaKey, true
	case errors.Is(err, backend.ErrSchemaValidationFailed):
		return connect.CodeInvalidArgument, CodeSchemaValidationFailed, true
	case errors.Is(err, backend.ErrInvalidChange):
		return connect.CodeInvalidArgument, changeProblem(err), true
	case errors.Is(err, backend.ErrDocumentSizeExceedsLimit):
		// Upstream's code for it: the push may succeed once others have
		// made the document smaller, so the SDK's retry is right.
		return connect.CodeResourceExhausted, CodeDocumentSizeExceedsLimit, true
	case errors.Is(err, backend.ErrTooManyAttachments):
		// Upstream's code; the SDK gives the attach up (it retries no
		// attach) and the user detaches a client first.
		return connect.CodeResourceExhausted, CodeTooManyAttachments, true
	case errors.Is(err, backend.ErrTooManySubscribers):
		// Upstream's code; the SDK retries the Watch every second and gets
		// through once another client stops watching.
		return connect.CodeResourceExhausted, CodeTooManySubscribers, true
	case errors.Is(err, backend.ErrInvalidChangePack):
		return connect.CodeInvalidArgument, CodeInvalidChangePack, true
	case errors.Is(err, backend.ErrEpochMismatch):
		return connect.CodeFailedPrecondition, CodeEpochMismatch, true
	case errors.Is(err, fault.ErrShuttingDown):
		return connect.CodeUnavailable, CodeShuttingDown, true
	case fault.IsRetryable(err):
		// Each layer marks the failures a later try may get past: a store
		// briefly down, a document another owner took, a stream this node
		// let go of.
		return connect.CodeUnavailable, CodeUnavailable, true
	case errors.Is(err, channel.ErrInvalidKey):
		return connect.CodeInvalidArgument, CodeInvalidChannelKey, true
	case errors.Is(err, channel.ErrPayloadTooLarge):
		// Sending it again cannot help: a code the SDK does not retry.
		return connect.CodeInvalidArgument, CodePayloadTooLarge, true
	case errors.Is(err, channel.ErrInvalidSession):
		return connect.CodeInvalidArgument, CodeInvalidArgument, true
	case errors.Is(err, channel.ErrSessionNotFound):
		return connect.CodeNotFound, CodeSessionNotFound, true
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled, CodeCanceled, true
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded, CodeDeadlineExceeded, true
	}
	return connect.CodeUnknown, "", false
}

// changeProblem names the reason a pushed change does not apply.
func changeProblem(err error) string {
	switch {
	case errors.Is(err, document.ErrRemoveRoot):
		return CodeRemoveRoot
	case errors.Is(err, document.ErrElementNotFound):
		return CodeElementNotFound
	case errors.Is(err, document.ErrWrongElementType):
		return CodeWrongElementType
	case errors.Is(err, document.ErrInvalidOperation):
		return CodeInvalidOperation
	}
	return CodeInvalidChange
}

// ToConnect maps an error from the backend (or the RPC layer) to the
// Connect error a client receives, its message the error's text: the layers
// below have said what the client does not know, so nothing is added here.
// Errors it does not know become internal: the client reads only "internal
// error", and the failure logger, the one place that logs a failed call,
// finds the cause in it.
func ToConnect(err error) error {
	if err == nil {
		return nil
	}
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		return cerr
	}
	if code, name, ok := Classify(err); ok {
		return New(code, name, err)
	}
	return New(connect.CodeInternal, CodeInternal, &internalError{cause: err})
}

// internalError hides an unexpected error from the client while keeping it
// for the log.
type internalError struct{ cause error }

func (e *internalError) Error() string { return "internal error" }

// InternalCause returns the unexpected error behind an internal Connect
// error, or nil.
func InternalCause(err error) error {
	var ie *internalError
	if errors.As(err, &ie) {
		return ie.cause
	}
	return nil
}

// RouteError gives a routing refusal the Connect error clients expect: a
// redirect names the owner (WrongNode), a forged forwarding mark is
// refused (PermissionDenied); other errors are returned as they are.
func RouteError(err error) error {
	var wrong *routing.WrongNodeError
	switch {
	case errors.As(err, &wrong):
		return WrongNode(wrong.Header, wrong.SessionKey, wrong.Err)
	case errors.Is(err, routing.ErrForgedForward):
		return PermissionDenied(err)
	}
	return err
}
