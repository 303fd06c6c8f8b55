package integration_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestPresenceBound attaches with a presence at the bound, then pushes one
// just over it, and attaches with one over it: what is over can never be
// accepted, so it is refused with a code clients do not retry.
func TestPresenceBound(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		// A key of 1 byte and a JSON string value filling the rest.
		presence := func(n int) map[string]string {
			return map[string]string{"p": `"` + strings.Repeat("x", n-3) + `"`}
		}
		a := newReplica(t, c)
		_, err := a.AttachWith(ctx, wire.UniqueKey(t, "doc"), presence(rpc.MaxPresenceBytes))
		wire.Must(t, err, "attach with a presence at the bound")

		a.NewChange(presence(rpc.MaxPresenceBytes + 1))
		_, err = a.PushPull(ctx)
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodePresenceTooLarge)

		b := newReplica(t, c)
		_, err = b.AttachWith(ctx, wire.UniqueKey(t, "doc"), presence(rpc.MaxPresenceBytes+1))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodePresenceTooLarge)
	})
}
