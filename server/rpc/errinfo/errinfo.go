// Package errinfo builds the Connect errors Yorkie clients parse: a Connect
// code with a google.rpc.ErrorInfo detail whose metadata "code" names the
// Yorkie error (the SDKs branch on that name, not on the message text).
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
