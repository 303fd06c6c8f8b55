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
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
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

// FreePort returns a TCP port that was free on every address a moment ago
// (a server binds them all). It is below the system's ephemeral range: a
// port in it can become the local port of any outgoing connection between
// now and the server's bind, or while a test restarts a server on it.
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	for range 1000 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port
	}
	t.Fatalf("find a free port: none below %d in 1000 tries", low)
	return 0
}

// ephemeralLow is the first port of the system's ephemeral range, from
// which outgoing connections take their local ports.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 11000 {
		return 32768
	}
	return low
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
