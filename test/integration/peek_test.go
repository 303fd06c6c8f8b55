package integration_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestPeekChannel reads counts without joining: the peek is not counted,
// needs no client, and a bad key is refused.
func TestPeekChannel(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		key := wire.UniqueKey(t, "room")
		peek := func(k string) (int64, error) {
			resp, err := c.PeekChannel(ctx, connect.NewRequest(&api.PeekChannelRequest{ChannelKey: k}))
			if err != nil {
				return 0, err
			}
			return resp.Msg.GetSessionCount(), nil
		}

		n, err := peek(key)
		require.NoError(t, err)
		require.Zero(t, n, "a channel nobody joined")

		a, b := newReplica(t, c), newReplica(t, c)
		attachChannel(t, c, a.ID, key)
		attachChannel(t, c, b.ID, key+".sub")
		for range 2 {
			n, err = peek(key)
			require.NoError(t, err)
			require.EqualValues(t, 2, n, "the channel and its sub-channel, never the peeker")
		}
		n, err = peek(key + ".sub")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		_, err = peek(".bad")
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidChannelKey)
		_, err = peek("")
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidChannelKey)
	})
}
