//go:build unix

package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
)

// A node refuses connections until it serves: its port is bound by New
// (the address is known, and taken), but a connection made before Start
// is refused, so a balancer retries it on another node instead of leaving
// it queued while the node still starts.
func TestPortRefusesConnectionsUntilStart(t *testing.T) {
	for _, host := range []string{"127.0.0.1", ""} {
		srv, err := server.New(context.Background(), server.Config{
			RPCConfig: server.RPCConfig{Host: host},
			Logger:    slog.New(slog.DiscardHandler),
			Admin:     admin.Settings{PasswordCost: bcrypt.MinCost},
		})
		require.NoError(t, err)
		_, port, err := net.SplitHostPort(srv.RPCAddr())
		require.NoError(t, err)
		require.NotEqual(t, "0", port)
		addr := net.JoinHostPort("127.0.0.1", port)

		_, err = net.Dial("tcp", addr)
		require.True(t, errors.Is(err, syscall.ECONNREFUSED), "dial before Start (host %q): %v", host, err)
		// The port stays taken meanwhile.
		_, err = net.Listen("tcp", addr)
		require.Error(t, err, "the port is bound before Start")

		require.NoError(t, srv.Start(context.Background()))
		resp, err := http.Get("http://" + addr + "/healthz")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, "ok", string(body))

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, srv.Shutdown(ctx))
		cancel()
	}
}

// A node shut down before it started releases its bound ports.
func TestPortOfUnstartedServerIsReleased(t *testing.T) {
	srv, err := server.New(context.Background(), server.Config{
		RPCConfig: server.RPCConfig{Host: "127.0.0.1"},
		Logger:    slog.New(slog.DiscardHandler),
		Admin:     admin.Settings{PasswordCost: bcrypt.MinCost},
	})
	require.NoError(t, err)
	addr := srv.RPCAddr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the port is free again")
	require.NoError(t, ln.Close())
}
