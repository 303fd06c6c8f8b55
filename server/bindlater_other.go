//go:build !unix

package server

import (
	"context"
	"net"
)

// bindTCP listens on address at once where a socket cannot be bound before
// it listens (see bindlater_unix.go).
func bindTCP(ctx context.Context, address string) (*boundListener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	return &boundListener{Listener: ln}, nil
}

// boundListener is a listener that listens already.
type boundListener struct{ net.Listener }

func (*boundListener) listen() error { return nil }
