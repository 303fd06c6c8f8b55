package multiprocess_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// BinEnv names the yorkie binary the suite runs (default: bin/yorkie at the
// repository root, built with go build -o bin/yorkie ./cmd/yorkie).
const BinEnv = "YORKIE_BIN"

// Bounds of the harness's waits; they only end broken runs.
const (
	startTimeout = 20 * time.Second
	stopTimeout  = 40 * time.Second
	// startAttempts retries a start whose free port was taken in between.
	startAttempts = 3
)

// ServerOptions describes one yorkie server process.
type ServerOptions struct {
	// Name labels the process in logs and failures ("" gives yorkie-<port>).
	Name string
	// MongoURI and MongoDatabase select the MongoDB backend; an empty URI
	// keeps the server's data in memory.
	MongoURI      string
	MongoDatabase string
	// LogLevel is passed as --log-level ("" gives info, so failing tests can
	// show what the server did).
	LogLevel string
	// Args are more flags, appended after the harness's own.
	Args []string
}

// Server is a yorkie server process started by a test. It is killed when the
// test ends; its output is shown if the test failed.
type Server struct {
	Name          string
	RPCPort       int
	ProfilingPort int
	// Process is the running (or last) process of the server.
	Process *testenv.Process

	bin  string
	args []string
}

// yorkieBinary returns the binary named by YORKIE_BIN, or bin/yorkie at the
// repository root, or reports it unavailable.
func yorkieBinary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		root, err := repoRoot()
		if err != nil {
			testenv.Unavailable(t, "yorkie binary: %v", err)
		}
		bin = filepath.Join(root, "bin", "yorkie")
	}
	if _, err := os.Stat(bin); err != nil {
		testenv.Unavailable(t, "yorkie binary not built (go build -o bin/yorkie ./cmd/yorkie), or set %s: %v", BinEnv, err)
	}
	return bin
}

// repoRoot walks up from the working directory to the server module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/yorkie-affinity/yorkie\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module github.com/yorkie-affinity/yorkie above the working directory")
		}
		dir = parent
	}
}

// StartServer starts a yorkie server on free loopback ports and waits until
// its /healthz answers.
func StartServer(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	bin := yorkieBinary(t)
	var lastErr error
	for range startAttempts {
		s := &Server{
			Name:          opts.Name,
			RPCPort:       testenv.FreePort(t),
			ProfilingPort: testenv.FreePort(t),
			bin:           bin,
		}
		if s.Name == "" {
			s.Name = fmt.Sprintf("yorkie-%d", s.RPCPort)
		}
		level := opts.LogLevel
		if level == "" {
			level = "info"
		}
		s.args = []string{"server",
			"--rpc-port", strconv.Itoa(s.RPCPort),
			"--profiling-port", strconv.Itoa(s.ProfilingPort),
			"--log-level", level,
		}
		if opts.MongoURI != "" {
			s.args = append(s.args, "--mongo-connection-uri", opts.MongoURI)
			if opts.MongoDatabase != "" {
				s.args = append(s.args, "--mongo-database", opts.MongoDatabase)
			}
		}
		s.args = append(s.args, opts.Args...)
		if lastErr = s.start(t); lastErr == nil {
			return s
		}
		// A port taken in between makes the process exit; a server that
		// runs but never gets healthy is not retried.
		select {
		case <-s.Process.Exited():
		default:
			t.Fatalf("%s: %v\n%s", s.Name, lastErr, s.Process.Output())
		}
	}
	t.Fatalf("yorkie server did not start in %d attempts: %v", startAttempts, lastErr)
	return nil
}

// start runs the process and waits until it is healthy or has exited.
func (s *Server) start(t testing.TB) error {
	t.Helper()
	s.Process = testenv.StartProcess(t, s.Name, s.bin, s.args...)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return s.WaitHealthy(ctx)
}

// Restart starts the server again on the same ports with the same flags,
// after stopping it with SIGKILL if it still runs.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(t); err != nil {
		t.Fatalf("restart %s: %v\n%s", s.Name, err, s.Process.Output())
	}
}

// RPCAddr is the host:port of the RPC port.
func (s *Server) RPCAddr() string { return "127.0.0.1:" + strconv.Itoa(s.RPCPort) }

// URL is the base URL clients call.
func (s *Server) URL() string { return "http://" + s.RPCAddr() }

// Output returns what the current process printed so far.
func (s *Server) Output() string { return s.Process.Output() }

// Alive reports whether the process still runs.
func (s *Server) Alive() bool {
	select {
	case <-s.Process.Exited():
		return false
	default:
		return true
	}
}

// WaitHealthy polls GET /healthz until it answers 200, the process exits or
// ctx ends.
func (s *Server) WaitHealthy(ctx context.Context) error {
	if err := waitHealthy(ctx, s.URL(), s.Process); err != nil {
		return fmt.Errorf("%s not healthy: %w", s.Name, err)
	}
	return nil
}

// waitHealthy polls GET url/healthz until it answers 200, p exits or ctx
// ends.
func waitHealthy(ctx context.Context, url string, p *testenv.Process) error {
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		if err != nil {
			return fmt.Errorf("health request: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /healthz: %s", resp.Status)
		}
		last = err
		select {
		case <-p.Exited():
			return fmt.Errorf("the process exited first: %w", last)
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill stops the process at once with SIGKILL, as a crash would, and waits
// until it is gone.
func (s *Server) Kill() { s.Process.Kill() }

// Terminate sends SIGTERM, which starts the server's graceful shutdown, and
// waits until the process exits or ctx ends.
func (s *Server) Terminate(ctx context.Context) error {
	if !s.Alive() {
		return nil
	}
	if err := syscall.Kill(s.Process.Pid(), syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM %s: %w", s.Name, err)
	}
	select {
	case <-s.Process.Exited():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s still runs after SIGTERM: %w", s.Name, ctx.Err())
	}
}

// Client returns a YorkieService client of the server over Connect with
// JSON, the JS SDK's protocol, on real TCP connections.
func (s *Server) Client(t testing.TB, opts ...connect.ClientOption) v1connect.YorkieServiceClient {
	t.Helper()
	p := servertest.ConnectJSON
	return v1connect.NewYorkieServiceClient(servertest.HTTPClient(t, p), s.URL(), append(p.ClientOptions(), opts...)...)
}
