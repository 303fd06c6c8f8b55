//go:build !linux

package streamconn

import (
	"context"
	"net"
)

// hangups watches nothing here: each detached stream reads its own
// connection to notice its client leaving.
type hangups struct{}

func newHangups() *hangups { return &hangups{} }

func (*hangups) watch(net.Conn, context.CancelFunc) (func(), bool) { return nil, false }

func (*hangups) close() {}
