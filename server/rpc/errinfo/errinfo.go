// Package errinfo holds Yorkie's error code names and the mapping of errors
// to the Connect errors clients get: a Connect code with a
// google.rpc.ErrorInfo detail whose metadata "code" names the Yorkie error
// (the SDKs branch on that name, not on the message text).
package errinfo

import (
	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// New returns err as a Connect error of the given code whose ErrorInfo
// detail names the Yorkie error code name.
func New(code connect.Code, name string, err error) *connect.Error {
	cerr := connect.NewError(code, err)
	detail, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{
		Reason:   name,
		Metadata: map[string]string{"code": name},
	})
	if derr == nil {
		cerr.AddDetail(detail)
	}
	return cerr
}

// Name returns the Yorkie error code name in a Connect error's ErrorInfo
// detail, or "" when it has none.
func Name(cerr *connect.Error) string {
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
	return New(connect.CodePermissionDenied, CodePermissionDenied, err)
}

// InvalidArgument reports a request that failed the RPC layer's own checks.
func InvalidArgument(err error) *connect.Error {
	return New(connect.CodeInvalidArgument, CodeInvalidArgument, err)
}
