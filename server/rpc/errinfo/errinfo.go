// Package errinfo holds Yorkie's error codes and the Connect errors that carry them.
//
// A Yorkie error is a Connect code with a google.rpc.ErrorInfo detail whose
// metadata "code" names it (the SDKs branch on that name, not on the
// message text); the package writes and reads those details and maps the
// backend's and the router's errors to them.
package errinfo

import (
	"errors"
	"fmt"
	"maps"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// New returns err as a Connect error of the given code whose ErrorInfo
// detail names the Yorkie error code name.
func New(code connect.Code, name string, err error) *connect.Error {
	return WithMetadata(code, name, nil, err)
}

// WithMetadata is New with more ErrorInfo metadata beside the "code".
func WithMetadata(code connect.Code, name string, meta map[string]string, err error) *connect.Error {
	md := make(map[string]string, len(meta)+1)
	maps.Copy(md, meta)
	md["code"] = name
	cerr := connect.NewError(code, err)
	detail, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Reason: name, Metadata: md})
	if derr == nil {
		cerr.AddDetail(detail)
	}
	return cerr
}

// Metadata returns the ErrorInfo metadata of a Connect error (err or one it
// wraps), where "code" names the Yorkie error; nil when it has none.
func Metadata(err error) map[string]string {
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		return nil
	}
	for _, d := range cerr.Details() {
		msg, derr := d.Value()
		if derr != nil {
			continue
		}
		if info, ok := msg.(*errdetails.ErrorInfo); ok {
			return info.GetMetadata()
		}
	}
	return nil
}

// Name returns the Yorkie error code name in a Connect error's ErrorInfo
// detail, or "" when it has none.
func Name(cerr *connect.Error) string {
	return Metadata(cerr)["code"]
}

// WrongNode is the redirect of a call that reached a node which does not own
// its document: code unavailable, which clients retry, with the owner's
// session key in the response header and in the ErrorInfo metadata
// ("code" = ErrWrongNode, "session_key" = the key), so a client or a proxy
// that honours the key reaches the owner next time.
func WrongNode(header, sessionKey string, err error) *connect.Error {
	cerr := WithMetadata(connect.CodeUnavailable, CodeWrongNode, map[string]string{"session_key": sessionKey}, err)
	cerr.Meta().Set(header, sessionKey)
	return cerr
}

// PermissionDenied refuses a call that needs the cluster secret.
func PermissionDenied(err error) *connect.Error {
	return New(connect.CodePermissionDenied, CodePermissionDenied, err)
}

// InvalidArgument reports a request that failed the RPC layer's own checks.
func InvalidArgument(err error) *connect.Error {
	return New(connect.CodeInvalidArgument, CodeInvalidArgument, err)
}

// Remote returns what a call to another node (the owner of a document,
// another member) failed with, for the caller: an error that node answered,
// which names a Yorkie code, as it is; anything else is the transport
// failing (the node crashed mid-call, a refused connection), which becomes
// unavailable, so clients retry instead of giving up. call names the call
// in the message; the cause stays wrapped.
func Remote(err error, call string) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) && Name(ce) != "" {
		return ce
	}
	return New(connect.CodeUnavailable, CodeUnavailable, fmt.Errorf("%s: %w", call, err))
}
