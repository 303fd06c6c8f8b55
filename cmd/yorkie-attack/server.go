package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// target is a started server and what talks to it.
type target struct {
	cmd   *exec.Cmd
	done  chan struct{}
	rpc   string // host:port of the RPC port
	prof  string // host:port of the profiling port
	http  *http.Client
	admin v1connect.AdminServiceClient
	token string
	log   *capped
}

// capped keeps the first bytes of a server's log.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	w   io.Writer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.buf.Len() < 1<<20 {
		c.buf.Write(p)
	}
	c.mu.Unlock()
	return c.w.Write(p)
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts path as a server on free loopback ports, in memory,
// with extra flags after the tool's own, and logs in as the default admin.
// Unless defaults is set, webhooks may point at loopback (the attacks'
// endpoints run here): binaries that refuse private addresses by default
// are told not to.
func startServer(ctx context.Context, path string, serverLog io.Writer, defaults bool, extra ...string) (*target, error) {
	help, _ := exec.CommandContext(ctx, path, "server", "-h").CombinedOutput()
	rpcPort, err := freePort()
	if err != nil {
		return nil, err
	}
	profPort, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"server", "--rpc-port", strconv.Itoa(rpcPort), "--profiling-port", strconv.Itoa(profPort), "--pprof-enabled"}
	if !defaults && bytes.Contains(help, []byte("webhook-refuse-private-addresses")) {
		args = append(args, "--webhook-refuse-private-addresses=false")
	}
	if bytes.Contains(help, []byte("-rpc-addr ")) {
		args = append(args, "--rpc-addr", "127.0.0.1")
	}
	args = append(args, extra...)
	t := &target{
		rpc:  fmt.Sprintf("127.0.0.1:%d", rpcPort),
		prof: fmt.Sprintf("127.0.0.1:%d", profPort),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		log:  &capped{w: serverLog},
		done: make(chan struct{}),
	}
	t.cmd = exec.Command(path, args...)
	t.cmd.Stdout, t.cmd.Stderr = t.log, t.log
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	go func() { _ = t.cmd.Wait(); close(t.done) }()
	if err := t.awaitHealthy(ctx); err != nil {
		t.stop()
		return nil, err
	}
	t.admin = v1connect.NewAdminServiceClient(t.http, "http://"+t.rpc, connect.WithProtoJSON())
	resp, err := t.admin.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("log in as admin: %w", err)
	}
	t.token = resp.Msg.GetToken()
	return t, nil
}

func (t *target) awaitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-t.done:
			return fmt.Errorf("server exited: %s", lastLines(t.log.String(), 5))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if _, err := t.healthz(ctx); err == nil {
			return nil
		}
	}
	return errors.New("server not healthy within 30s")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// stop ends the server with SIGTERM, then SIGKILL.
func (t *target) stop() {
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
}

// healthz times one GET /healthz on a fresh connection.
func (t *target) healthz(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.rpc+"/healthz", nil)
	if err != nil {
		return 0, err
	}
	req.Close = true
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("healthz: %s", resp.Status)
	}
	return time.Since(start), nil
}

// authorized adds the admin token to a request.
func authorized[T any](t *target, msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+t.token)
	return req
}

// project creates a project named name with fields set.
func (t *target) project(ctx context.Context, name string, fields *api.UpdatableProjectFields) (*api.Project, error) {
	created, err := t.admin.CreateProject(ctx, authorized(t, &api.CreateProjectRequest{Name: name}))
	if err != nil {
		return nil, fmt.Errorf("create project %s: %w", name, err)
	}
	p := created.Msg.GetProject()
	if fields == nil {
		return p, nil
	}
	updated, err := t.admin.UpdateProject(ctx, authorized(t, &api.UpdateProjectRequest{Id: p.GetId(), Fields: fields}))
	if err != nil {
		return nil, fmt.Errorf("update project %s: %w", name, err)
	}
	return updated.Msg.GetProject(), nil
}

// apiKeyed sends a project's public key with every call.
type apiKeyed struct {
	key  string
	next http.RoundTripper
}

func (a apiKeyed) RoundTrip(r *http.Request) (*http.Response, error) {
	if a.key != "" {
		r = r.Clone(r.Context())
		r.Header.Set("x-api-key", a.key)
	}
	return a.next.RoundTrip(r)
}

// yorkie returns a YorkieService client of the project with apiKey ("" for
// the default project) speaking Connect JSON over HTTP/1.1, as the JS SDK
// does; each client has connections of its own.
func (t *target) yorkie(apiKey string) (v1connect.YorkieServiceClient, *http.Transport) {
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	hc := &http.Client{Transport: apiKeyed{apiKey, tr}}
	return v1connect.NewYorkieServiceClient(hc, "http://"+t.rpc, connect.WithProtoJSON()), tr
}

// scrape reads the server's /metrics; with gc it forces a collection first
// (through /debug/pprof/heap?gc=1), so heap figures hold live bytes.
func (t *target) scrape(ctx context.Context, gc bool) (map[string]float64, error) {
	if gc {
		if err := t.get(ctx, "/debug/pprof/heap?gc=1", io.Discard); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	if err := t.get(ctx, "/metrics", &buf); err != nil {
		return nil, err
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.Contains(line, "{") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}

func (t *target) get(ctx context.Context, path string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+t.prof+path, nil)
	if err != nil {
		return err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// usage is the server's cost at one moment.
type usage struct {
	goroutines, fds, heap, rss float64
}

func (t *target) usage(ctx context.Context, gc bool) (usage, error) {
	m, err := t.scrape(ctx, gc)
	if err != nil {
		return usage{}, err
	}
	return usage{m["go_goroutines"], m["process_open_fds"], m["go_memstats_heap_inuse_bytes"], m["process_resident_memory_bytes"]}, nil
}

func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
