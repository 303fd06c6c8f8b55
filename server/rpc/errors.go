package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Error code names carried in the google.rpc.ErrorInfo metadata "code". Clients
// (the JS SDK in particular) branch on these names, not on the message text.
const (
	CodeClientNotFound      = "ErrClientNotFound"
	CodeClientNotActivated  = "ErrClientNotActivated"
	CodeDocumentNotFound    = "ErrDocumentNotFound"
	CodeDocumentNotAttached = "ErrDocumentNotAttached"
	CodeDocumentRemoved     = "ErrDocumentRemoved"
	CodeInvalidClientSeq    = "ErrInvalidClientSeq"
	CodeInvalidChangePack   = "ErrInvalidChangePack"
	CodeShuttingDown        = "ErrShuttingDown"
	CodeUnavailable         = "ErrUnavailable"
	CodeInvalidArgument     = "ErrInvalidArgument"
	CodeRequestTooLarge     = bounds.CodeRequestTooLarge
	CodeUnimplemented       = "ErrUnimplemented"
	CodeInternal            = "ErrInternal"
	CodeCanceled            = "ErrCanceled"
	CodeDeadlineExceeded    = "ErrDeadlineExceeded"
	CodeWrongNode           = "ErrWrongNode"
	CodePermissionDenied    = "ErrPermissionDenied"
	CodeInvalidChannelKey   = "ErrInvalidChannelKey"
	CodePayloadTooLarge     = "ErrPayloadTooLarge"
	CodeSessionNotFound     = "ErrSessionNotFound"
	// CodeUnauthenticated refuses a call for its API key: the code the SDK
	// acts on (it asks its authTokenInjector again and retries).
	CodeUnauthenticated = "ErrUnauthenticated"
	// CodeProjectNotFound refuses an API key no project has, not_found as
	// upstream answers it: the SDK gives up instead of asking its
	// authTokenInjector for a token that cannot help.
	CodeProjectNotFound = "ErrProjectNotFound"
	// A pushed change that does not apply gets the name of its problem.
	CodeInvalidOperation = "ErrInvalidOperation"
	CodeElementNotFound  = "ErrElementNotFound"
	CodeWrongElementType = "ErrWrongElementType"
	CodeRemoveRoot       = "ErrRemoveRoot"
	CodeInvalidChange    = "ErrInvalidChange"
	// CodeDocumentSizeExceedsLimit is the SDK's name for a document past
	// max_size_per_document.
	CodeDocumentSizeExceedsLimit = "ErrDocumentSizeExceedsLimit"
	// CodeTooManySubscribers is the SDK's name for a Watch past the
	// project's subscribers per document.
	CodeTooManySubscribers = "ErrTooManySubscribers"
	// CodeRevisionNotFound is upstream's name for a revision the document
	// does not have.
	CodeRevisionNotFound = "ErrRevisionNotFound"
	// CodeFailedPrecondition names a call the state of its subject refuses.
	CodeFailedPrecondition = "ErrFailedPrecondition"
	// CodeEpochMismatch is the SDK's name for a PushPull of a client that
	// attached before a compaction: the SDK publishes its epoch-mismatch
	// event and stops syncing the document.
	CodeEpochMismatch = "ErrEpochMismatch"
)

// classify returns the Connect code and code name of a known sentinel error.
func classify(err error) (connect.Code, string, bool) {
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

// newError builds a Connect error whose google.rpc.ErrorInfo detail names the
// Yorkie error code, the form the SDKs parse.
func newError(code connect.Code, name string, err error) *connect.Error {
	return errinfo.New(code, name, err)
}

// WrongNode is the redirect of a call that reached a node which does not own
// its document: code unavailable, which clients retry, with the owner's
// session key in the response header and in the ErrorInfo metadata
// ("code" = ErrWrongNode, "session_key" = the key), so a client or a proxy
// that honours the key reaches the owner next time.
func WrongNode(header, sessionKey string, err error) *connect.Error {
	cerr := connect.NewError(connect.CodeUnavailable, err)
	detail, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{
		Reason:   CodeWrongNode,
		Metadata: map[string]string{"code": CodeWrongNode, "session_key": sessionKey},
	})
	if derr == nil {
		cerr.AddDetail(detail)
	}
	cerr.Meta().Set(header, sessionKey)
	return cerr
}

// PermissionDenied refuses a call that needs the cluster secret.
func PermissionDenied(err error) *connect.Error {
	return newError(connect.CodePermissionDenied, CodePermissionDenied, err)
}

// invalidArgument reports a request that failed the RPC layer's own checks.
func invalidArgument(err error) *connect.Error {
	return newError(connect.CodeInvalidArgument, CodeInvalidArgument, err)
}

// toConnectError maps an error from the backend (or the RPC layer) to the
// Connect error a client receives, its message the error's text: the layers
// below have said what the client does not know, so nothing is added here.
// Errors it does not know become internal: the client reads only "internal
// error", and the failure logger, the one place that logs a failed call,
// finds the cause in it.
func toConnectError(err error) error {
	if err == nil {
		return nil
	}
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		return cerr
	}
	if code, name, ok := classify(err); ok {
		return newError(code, name, err)
	}
	return newError(connect.CodeInternal, CodeInternal, &internalError{cause: err})
}

// internalError hides an unexpected error from the client while keeping it
// for the log.
type internalError struct{ cause error }

func (e *internalError) Error() string { return "internal error" }

// internalCause returns the unexpected error behind an internal Connect
// error, or nil.
func internalCause(err error) error {
	var ie *internalError
	if errors.As(err, &ie) {
		return ie.cause
	}
	return nil
}

// errorName returns the Yorkie error code name in a Connect error's ErrorInfo
// detail, or "" when it has none.
func errorName(cerr *connect.Error) string {
	for _, d := range cerr.Details() {
		msg, err := d.Value()
		if err != nil {
			continue
		}
		if info, ok := msg.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()["code"]
		}
	}
	return ""
}
