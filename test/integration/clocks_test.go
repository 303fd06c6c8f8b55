package integration_test

import (
	"math"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestOverflowingLamportRefused pushes a change with lamport 2^63-1, after
// which every SDK replica's next lamport would overflow: it is refused with
// nothing stored, and the document's other client goes on editing.
func TestOverflowingLamportRefused(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		a.Lamport = math.MaxInt64 - 1
		a.Edit(1)
		_, err := a.PushPull(ctx)
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidOperation)

		b.Edit(1)
		pack := b.MustPushPull()
		require.Empty(t, pack.GetChanges(), "the refused change was not stored")
		c2 := newReplica(t, c)
		c2.MustAttach(b.DocKey)
		c2.Edit(1)
		c2.MustPushPull()
		edits := 0
		for _, ch := range b.MustPushPull().GetChanges() {
			edits += len(ch.GetOperations())
		}
		require.Equal(t, 1, edits, "the document is still edited")
	})
}
