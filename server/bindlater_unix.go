//go:build unix

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
)

// bindTCP reserves address (its port is known at once, 0 picks a free one)
// without listening yet: until listen, a connection to it is refused rather
// than queued. A node restarted on the same port is otherwise reachable from
// the moment it binds, long before it serves (it still connects to its
// stores and joins the cluster); a balancer that has not yet seen the old
// process go sends it calls that wait for all of that, where a refused
// connection is retried on another node at once.
func bindTCP(_ context.Context, address string) (*boundListener, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := net.LookupPort("tcp", portText)
	if err != nil {
		return nil, err
	}
	var ip net.IP
	if host != "" {
		addrs, err := net.DefaultResolver.LookupIPAddr(context.Background(), host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address for %q", host)
		}
		ip = addrs[0].IP
	}
	var (
		family = syscall.AF_INET6
		sa     syscall.Sockaddr
	)
	switch ip4 := ip.To4(); {
	case ip == nil: // every interface, IPv4 and IPv6 as net.Listen does
		sa = &syscall.SockaddrInet6{Port: port}
	case ip4 != nil:
		family = syscall.AF_INET
		s4 := &syscall.SockaddrInet4{Port: port}
		copy(s4.Addr[:], ip4)
		sa = s4
	default:
		s6 := &syscall.SockaddrInet6{Port: port}
		copy(s6.Addr[:], ip.To16())
		sa = s6
	}
	fd, err := socket(family)
	if err != nil && ip == nil {
		// No IPv6 here: every IPv4 interface.
		family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: port}
		fd, err = socket(family)
	}
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	// A port of our own may still hold the last process's closing
	// connections: reuse it, as net.Listen does. Another socket that reuses
	// addresses could bind it too until listen, which then fails. A port
	// the system picks is new: without reuse, nothing else can bind it.
	if port != 0 {
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
			_ = syscall.Close(fd)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	if family == syscall.AF_INET6 && ip == nil {
		if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_IPV6, syscall.IPV6_V6ONLY, 0); err != nil {
			_ = syscall.Close(fd)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	if err := syscall.Bind(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return nil, &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", err)}
	}
	bound, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("getsockname", err)
	}
	var addr *net.TCPAddr
	switch b := bound.(type) {
	case *syscall.SockaddrInet4:
		addr = &net.TCPAddr{IP: net.IP(b.Addr[:]).To16(), Port: b.Port}
	case *syscall.SockaddrInet6:
		addr = &net.TCPAddr{IP: net.IP(b.Addr[:]), Port: b.Port}
	}
	return &boundListener{fd: fd, addr: addr}, nil
}

// socket opens a TCP socket that is not inherited by child processes.
func socket(family int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, syscall.IPPROTO_TCP)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(fd)
	return fd, nil
}

// boundListener is a bound TCP socket that listens once listen is called.
type boundListener struct {
	addr *net.TCPAddr

	mu     sync.Mutex
	fd     int // until listen or Close; -1 after
	ln     net.Listener
	closed bool
}

// errNotListening is what Accept returns before listen.
var errNotListening = errors.New("server: port bound, not listening yet")

// listen starts taking connections.
func (l *boundListener) listen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return nil
	}
	if l.closed {
		return net.ErrClosed
	}
	if err := syscall.Listen(l.fd, syscall.SOMAXCONN); err != nil {
		return os.NewSyscallError("listen", err)
	}
	f := os.NewFile(uintptr(l.fd), "rpc-port")
	l.fd = -1
	ln, err := net.FileListener(f) // duplicates the descriptor
	_ = f.Close()
	if err != nil {
		l.closed = true
		return fmt.Errorf("listen: %w", err)
	}
	l.ln = ln
	return nil
}

func (l *boundListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	ln := l.ln
	closed := l.closed
	l.mu.Unlock()
	if ln == nil {
		if closed {
			return nil, net.ErrClosed
		}
		return nil, errNotListening
	}
	return ln.Accept()
}

func (l *boundListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln != nil {
		return l.ln.Close()
	}
	if l.closed {
		return nil
	}
	l.closed = true
	err := syscall.Close(l.fd)
	l.fd = -1
	return err
}

func (l *boundListener) Addr() net.Addr { return l.addr }
