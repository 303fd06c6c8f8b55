package errinfo_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// TestRemoteKeepsTheOwnersAnswer: an error the other node answered keeps
// its code and name; a failure to reach it is unavailable with the cause
// kept (reroute tells a refused connection by it).
func TestRemoteKeepsTheOwnersAnswer(t *testing.T) {
	answered := errinfo.New(connect.CodeNotFound, errinfo.CodeDocumentNotFound, errors.New("no such document"))
	assert.Same(t, answered, errinfo.Remote(fmt.Errorf("wrapped: %w", answered), "call the owner"))

	// A real refused connection: nothing listens on a closed server's port.
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	_, dialErr := net.Dial("tcp", addr)
	require.Error(t, dialErr)
	for _, cause := range []error{dialErr, connect.NewError(connect.CodeUnavailable, dialErr)} {
		got := errinfo.Remote(cause, "call the owner")
		assert.Equal(t, connect.CodeUnavailable, got.Code())
		assert.Equal(t, errinfo.CodeUnavailable, errinfo.Name(got))
		assert.ErrorIs(t, got, syscall.ECONNREFUSED)
		assert.Contains(t, got.Message(), "call the owner")
	}
}
