package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is a redis-server started by a test, in the foreground so that the
// test owns its process, with persistence off and a replication set-up that
// does not wait before the first sync.
type Redis struct {
	// Addr is the server's 127.0.0.1:port.
	Addr string
	// Port is the server's port.
	Port int
	// Dir is the server's working directory, inside the test's TempDir.
	Dir string
	// Process is the running server.
	Process *Process
}

// StartRedis starts a redis-server on a free loopback port and waits until it
// answers PING. extraArgs are appended to the command line (for example
// "--replicaof", "127.0.0.1", "6379"). The server is killed when the test
// ends. A missing redis-server skips the test (or fails it, see Required).
func StartRedis(t testing.TB, extraArgs ...string) *Redis {
	t.Helper()
	bin := LookBinary(t, "redis-server")
	var lastOutput string
	// The free port may be taken between FreePort and the server's bind;
	// try a few times.
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		dir := t.TempDir()
		args := []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--daemonize", "no",
			"--dir", dir,
			"--save", "",
			"--appendonly", "no",
			"--repl-diskless-sync-delay", "0",
		}
		args = append(args, extraArgs...)
		r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir}
		r.Process = StartProcess(t, fmt.Sprintf("redis-server:%d", port), bin, args...)
		if err := r.waitReady(10 * time.Second); err == nil {
			return r
		}
		lastOutput = r.Process.Output()
		r.Process.Kill()
	}
	t.Fatalf("redis-server did not answer PING; last output:\n%s", lastOutput)
	return nil
}

// waitReady polls PING until the server answers PONG, the process exits or
// the timeout passes.
func (r *Redis) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		reply, err := r.Command(ctx, "PING")
		if err == nil && reply == "PONG" {
			return nil
		}
		select {
		case <-r.Process.Exited():
			return fmt.Errorf("redis-server exited: %w", errors.Join(err, r.Process.err))
		case <-ctx.Done():
			return fmt.Errorf("redis-server at %s not ready: %w", r.Addr, errors.Join(ctx.Err(), err))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Command runs one raw command on a new connection (for example
// "REPLICAOF", "NO", "ONE") and returns the reply as text: a status or bulk
// string as is, an integer in decimal, an array as its elements joined by
// newlines, a null as "". An error reply is returned as an error.
func (r *Redis) Command(ctx context.Context, args ...string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return "", fmt.Errorf("redis command %v: %w", args, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", fmt.Errorf("redis command %v: write: %w", args, err)
	}
	reply, err := readReply(bufio.NewReader(c))
	if err != nil {
		return "", fmt.Errorf("redis command %v: %w", args, err)
	}
	return reply, nil
}

// MustCommand is Command that fails the test on error.
func (r *Redis) MustCommand(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := r.Command(ctx, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return reply
}

// readReply reads one RESP2 reply.
func readReply(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read reply: %w", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("read reply: empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", fmt.Errorf("error reply: %s", body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("read reply: bulk length %q: %w", body, err)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", fmt.Errorf("read reply: bulk body: %w", err)
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("read reply: array length %q: %w", body, err)
		}
		parts := make([]string, 0, max(n, 0))
		for i := 0; i < n; i++ {
			p, err := readReply(br)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	default:
		return "", fmt.Errorf("read reply: unexpected line %q", line)
	}
}
