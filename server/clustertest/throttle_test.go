package clustertest_test

import (
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestLogInThrottleAcrossNodes: failed log-ins spread over the nodes count
// together, so a guesser gains nothing from reaching several nodes. The
// nodes' clock stands still, so the backoff cannot run out mid-test.
func TestLogInThrottleAcrossNodes(t *testing.T) {
	at := time.Now()
	c := clustertest.Start(t, 3, clustertest.WithSeams(func(int) []server.Option {
		return []server.Option{server.WithClock(func() time.Time { return at })}
	}))
	ctx := wire.Context(t)
	for i := range 5 { // the free attempts of one username, spread over the nodes
		_, err := adminOf(c.Node(i%3)).LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "wrong-guess"}))
		require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "attempt %d: %v", i, err)
	}
	for i := range 3 {
		_, err := adminOf(c.Node(i)).LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
		require.Equal(t, connect.CodeResourceExhausted, connect.CodeOf(err), "node %d: %v", i, err)
		require.Equal(t, "ErrTooManyAttempts", wire.ErrorInfo(err)["code"])
	}
}
