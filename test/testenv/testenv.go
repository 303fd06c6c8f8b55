// Package testenv starts the real servers that tests need (Redis, etcd, a
// MongoDB-wire server, yorkie itself) on loopback ports, and decides what a
// test does when one cannot be had: skip on a developer's machine, fail when
// YORKIE_TEST_REQUIRE_SERVERS=1 (set by the project's test command and CI).
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns a missing server into
// a test failure instead of a skip.
const RequireEnv = "YORKIE_TEST_REQUIRE_SERVERS"

// Required reports whether missing servers must fail tests.
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0" && v != "false"
}

// Unavailable skips t, or fails it when servers are required, saying why.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (required because %s is set)", msg, RequireEnv)
	}
	t.Skipf("%s (set %s=1 to make this a failure)", msg, RequireEnv)
}

// LookBinary returns the path of a server binary, or reports it unavailable.
func LookBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s is not installed: %v", name, err)
	}
	return path
}

// FreePort returns a TCP port that was free on every address a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	// Every address, as the server binds its ports: a port free on
	// 127.0.0.1 alone may be in use on another loopback address.
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitListening waits until addr accepts TCP connections or ctx ends.
func WaitListening(ctx context.Context, addr string) error {
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to listen: %w", addr, errors.Join(ctx.Err(), err))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Process is a server process started by a test. Its output is kept so that a
// failing test can show it.
type Process struct {
	Name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// StartProcess starts bin with args and stops it (SIGKILL) when the test ends.
func StartProcess(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.Output())
		}
	})
	return p
}

// Pid is the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill stops the process with SIGKILL and waits for it to exit.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Output returns what the process printed so far.
func (p *Process) Output() string { return p.out.String() }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Clone(s.b.String())
}
