package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// goAwayGrace is how long a shutting-down port waits before it closes a
// connection with no request in flight: net/http flushes the last frames of
// a response and the HTTP/2 GOAWAY right after it reports the connection
// idle, and the peer gets many round trips (within a cluster, or to a
// balancer) to read them.
const goAwayGrace = 50 * time.Millisecond

// idleCloser closes the connections of a shutting-down http.Server that
// carry no request. http.Server.Shutdown closes idle HTTP/1.1 connections
// itself, but an HTTP/2 connection with no stream open gets a GOAWAY and
// is closed only when the peer closes it or a second later; Go's HTTP/2
// client keeps such a connection open (it only stops using it), so every
// node that had relayed a Watch stream to a node held the node's exit up by
// that second once it had drained.
type idleCloser struct {
	grace time.Duration
	// afterFunc runs f after d (time.AfterFunc; tests fire it themselves).
	afterFunc func(d time.Duration, f func())
	// closed, when set, is called after the closer closed a connection.
	closed func(net.Conn)

	mu      sync.Mutex
	conns   map[net.Conn]*connIdle
	closing bool
}

// connIdle is what the closer knows of a connection.
type connIdle struct {
	idle bool   // no request in flight
	gen  uint64 // state changes seen: a close scheduled at one is void later
}

func newIdleCloser(grace time.Duration) *idleCloser {
	return &idleCloser{
		grace:     grace,
		afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		conns:     map[net.Conn]*connIdle{},
	}
}

// install makes c follow srv's connections and close the idle ones once srv
// shuts down.
func (c *idleCloser) install(srv *http.Server) {
	srv.ConnState = c.connState
	srv.RegisterOnShutdown(c.shutdown)
}

// connState follows a connection's state (net/http reports an HTTP/2
// connection's first stream opening and its last one ending as StateActive
// and StateIdle).
func (c *idleCloser) connState(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch st {
	case http.StateNew, http.StateActive, http.StateIdle:
		e := c.conns[conn]
		if e == nil {
			e = &connIdle{}
			c.conns[conn] = e
		}
		e.gen++
		e.idle = st == http.StateIdle
		if e.idle && c.closing {
			c.closeLaterLocked(conn, e.gen)
		}
	default: // closed or hijacked: no longer the server's
		delete(c.conns, conn)
	}
}

// shutdown closes every connection that is idle for the grace from now on.
func (c *idleCloser) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	for conn, e := range c.conns {
		if e.idle {
			c.closeLaterLocked(conn, e.gen)
		}
	}
}

// closeLaterLocked closes conn after the grace unless its state changed.
func (c *idleCloser) closeLaterLocked(conn net.Conn, gen uint64) {
	c.afterFunc(c.grace, func() {
		c.mu.Lock()
		e := c.conns[conn]
		stale := e == nil || e.gen != gen
		if !stale {
			delete(c.conns, conn)
		}
		c.mu.Unlock()
		if stale {
			return
		}
		_ = conn.Close()
		if c.closed != nil {
			c.closed(conn)
		}
	})
}
