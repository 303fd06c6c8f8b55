package streamconn

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"
)

// hangups notices clients closing their detached streams' connections
// with one epoll set and one goroutine for all of them, instead of a
// goroutine per stream parked in a read. Only the peer's hang-up is
// watched (EPOLLRDHUP, and the errors epoll always reports): bytes a client
// sends on a stream's connection are not read, as no request may follow a
// stream on it.
type hangups struct {
	mu      sync.Mutex
	epfd    int // -1 until the first stream, or when epoll is unavailable
	failed  bool
	closed  bool
	cancels map[int32]context.CancelFunc
}

func newHangups() *hangups {
	return &hangups{epfd: -1, cancels: map[int32]context.CancelFunc{}}
}

// pollTimeoutMillis bounds each wait, so that the goroutine notices close.
const pollTimeoutMillis = 1000

// watch has cancel called when the peer hangs up conn. It reports false
// when conn is not a TCP socket this can watch; stop ends the watch and
// must be called before conn closes.
func (h *hangups) watch(conn net.Conn, cancel context.CancelFunc) (stop func(), ok bool) {
	tc, ok := tcpConn(conn)
	if !ok {
		return nil, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.start() {
		return nil, false
	}
	var fd int32
	var addErr error
	if err := raw.Control(func(f uintptr) {
		fd = int32(f)
		h.cancels[fd] = cancel
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: fd}
		addErr = syscall.EpollCtl(h.epfd, syscall.EPOLL_CTL_ADD, int(f), &ev)
	}); err != nil || addErr != nil {
		delete(h.cancels, fd)
		return nil, false
	}
	epfd := h.epfd
	return func() {
		h.mu.Lock()
		delete(h.cancels, fd)
		h.mu.Unlock()
		_ = raw.Control(func(f uintptr) {
			_ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, int(f), nil)
		})
	}, true
}

// start creates the epoll set and its goroutine on first use; h.mu is held.
func (h *hangups) start() bool {
	if h.epfd >= 0 {
		return true
	}
	if h.failed || h.closed {
		return false
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		h.failed = true
		return false
	}
	h.epfd = epfd
	go h.loop(epfd)
	return true
}

// loop cancels the streams whose peers hung up, until close.
func (h *hangups) loop(epfd int) {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, err := syscall.EpollWait(epfd, events, pollTimeoutMillis)
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			_ = syscall.Close(epfd)
			return
		}
		var cancels []context.CancelFunc
		for _, ev := range events[:max(n, 0)] {
			if c, ok := h.cancels[ev.Fd]; ok {
				delete(h.cancels, ev.Fd)
				cancels = append(cancels, c)
			}
		}
		h.mu.Unlock()
		for _, c := range cancels {
			c()
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			h.mu.Lock()
			h.failed, h.epfd = true, -1
			for fd, c := range h.cancels {
				// Nothing watches these any more: end them, and the
				// clients reconnect to streams that are watched.
				delete(h.cancels, fd)
				cancels = append(cancels, c)
			}
			h.mu.Unlock()
			for _, c := range cancels {
				c()
			}
			_ = syscall.Close(epfd)
			return
		}
	}
}

// close stops the goroutine; streams watched after it get their own reader.
func (h *hangups) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
}

// tcpConn finds the TCP socket under conn: net/http hands hijacked
// connections over as they were accepted, possibly wrapped by a listener
// that exposes the socket with NetConn. TLS connections are not watched
// this way: their bytes are not the application's.
func tcpConn(conn net.Conn) (*net.TCPConn, bool) {
	for range 4 {
		switch c := conn.(type) {
		case *net.TCPConn:
			return c, true
		case *tls.Conn:
			return nil, false
		case interface{ NetConn() net.Conn }:
			conn = c.NetConn()
		default:
			return nil, false
		}
	}
	return nil, false
}
