package authwebhook

import (
	"errors"

	"connectrpc.com/connect"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// Sentinel errors of Check; every error Check returns matches one of them.
var (
	// ErrPermissionDenied: the webhook answered 403 with "allowed": false.
	ErrPermissionDenied = errors.New("auth webhook denied access")
	// ErrUnauthenticated: the webhook answered 401 with "allowed": false; the
	// client should get a new token and try again.
	ErrUnauthenticated = errors.New("auth webhook did not accept the token")
	// ErrUnavailable: the webhook could not be reached, did not answer within
	// the timeout, or kept answering a retryable status (5xx, 429).
	ErrUnavailable = errors.New("auth webhook unavailable")
	// ErrInvalidAnswer: the webhook answered, but not in the expected form
	// (another status, a body that is not the expected JSON, status and body
	// disagreeing). The call is refused like a denial.
	ErrInvalidAnswer = errors.New("auth webhook answer invalid")
	// ErrMisconfigured: the project's webhook settings cannot be used (a URL
	// that is not http(s), a refused address, a policy that cannot work).
	// The call is refused like a denial.
	ErrMisconfigured = errors.New("auth webhook misconfigured")
)

// Error code names of the ErrorInfo detail ConnectError attaches, upstream
// Yorkie's: the JS SDK asks authTokenInjector for a new token and retries on
// ErrUnauthenticated, and gives up on the others.
const (
	CodePermissionDenied = "ErrPermissionDenied"
	CodeUnauthenticated  = "ErrUnauthenticated"
	// CodeWebhookTimeout: the webhook could not be reached or kept failing.
	CodeWebhookTimeout = "ErrWebhookTimeout"
	// CodeInvalidJSONResponse: the webhook answered, not as it should.
	CodeInvalidJSONResponse = "ErrInvalidJSONResponse"
	// CodeInvalidWebhookURL: the project's webhook cannot be called.
	CodeInvalidWebhookURL = "ErrInvalidWebhookURL"
)

// checkError carries the webhook's reason next to the sentinel.
type checkError struct {
	sentinel error
	reason   string // the webhook's own words, meant for the client
	detail   string // for the server's log only: URL, status, cause
}

func (e *checkError) Error() string {
	msg := e.sentinel.Error()
	if e.reason != "" {
		msg += ": " + e.reason
	}
	if e.detail != "" {
		msg += " (" + e.detail + ")"
	}
	return msg
}

func (e *checkError) Unwrap() error { return e.sentinel }

// Reason returns the reason the webhook gave with its answer, "" if none.
func Reason(err error) string {
	var ce *checkError
	if errors.As(err, &ce) {
		return ce.reason
	}
	return ""
}

// ConnectError maps an error of Check to the error a client receives, with
// a google.rpc.ErrorInfo detail whose metadata holds "code" and, when the
// webhook gave one, "reason" (the SDK hands it to authTokenInjector). The
// message names the outcome only: the webhook's URL and the transport
// error stay in the server's log. ok is false for errors not from Check.
//
// A webhook that fails (cannot be reached, answers out of form, is
// misconfigured) fails the call closed with internal, as upstream does: the
// SDK does not retry it, so a broken webhook stops its clients instead of
// letting them through or loading the webhook with retries; they attach
// again once it is fixed.
func ConnectError(err error) (cerr *connect.Error, ok bool) {
	var code connect.Code
	var name, msg string
	switch {
	case errors.Is(err, ErrUnauthenticated):
		code, name, msg = connect.CodeUnauthenticated, CodeUnauthenticated, "unauthenticated"
	case errors.Is(err, ErrPermissionDenied):
		code, name, msg = connect.CodePermissionDenied, CodePermissionDenied, "permission denied"
	case errors.Is(err, ErrInvalidAnswer):
		code, name, msg = connect.CodeInternal, CodeInvalidJSONResponse, "auth webhook answer invalid"
	case errors.Is(err, ErrMisconfigured):
		code, name, msg = connect.CodeInternal, CodeInvalidWebhookURL, "auth webhook misconfigured"
	case errors.Is(err, ErrUnavailable):
		code, name, msg = connect.CodeInternal, CodeWebhookTimeout, "auth webhook unavailable"
	default:
		return nil, false
	}
	reason := Reason(err)
	if reason != "" {
		msg += ": " + reason
	}
	var meta map[string]string
	if reason != "" {
		meta = map[string]string{"reason": reason}
	}
	cerr = errinfo.WithMetadata(code, name, meta, errors.New(msg))
	return cerr, true
}
