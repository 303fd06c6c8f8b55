package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// etcdStartTimeout bounds how long a fresh etcd may take to become healthy.
const etcdStartTimeout = 30 * time.Second

// EtcdMember is one etcd server process of a test cluster.
type EtcdMember struct {
	// Name is the member's name in the cluster (n1, n2, ...).
	Name string
	// ClientURL is the URL clients connect to.
	ClientURL string
	// PeerURL is the URL the other members replicate through.
	PeerURL string
	// Process is the running server.
	Process *Process
}

// EtcdCluster is a loopback etcd cluster started by a test.
type EtcdCluster struct {
	// Endpoints are the client URLs of all members, for clientv3.Config.
	Endpoints []string
	// Members are the members in start order.
	Members []*EtcdMember
}

// StartEtcd starts a single-member etcd on free loopback ports, with its data
// in a temporary directory, waits until it is healthy and returns its client
// endpoints. The server is killed when the test ends.
func StartEtcd(t testing.TB) (endpoints []string) {
	t.Helper()
	return StartEtcdCluster(t, 1).Endpoints
}

// StartEtcdCluster starts an n-member etcd cluster on loopback and waits
// until every member is healthy (which needs an elected leader).
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("StartEtcdCluster: need at least one member, got %d", n)
	}
	bin := LookBinary(t, "etcd")
	ports := distinctFreePorts(t, 2*n)

	c := &EtcdCluster{}
	var initial []string
	for i := range n {
		m := &EtcdMember{
			Name:      fmt.Sprintf("n%d", i+1),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
		}
		c.Members = append(c.Members, m)
		c.Endpoints = append(c.Endpoints, m.ClientURL)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	for _, m := range c.Members {
		// The temporary directory is removed after the process is killed:
		// cleanups run last-registered first.
		dir := t.TempDir()
		m.Process = StartProcess(t, "etcd "+m.Name, bin,
			"--name", m.Name,
			"--data-dir", dir,
			"--listen-client-urls", m.ClientURL,
			"--advertise-client-urls", m.ClientURL,
			"--listen-peer-urls", m.PeerURL,
			"--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", "test-"+strings.Join(initial, ","),
			"--logger", "zap",
		)
	}

	ctx, cancel := context.WithTimeout(context.Background(), etcdStartTimeout)
	defer cancel()
	for _, m := range c.Members {
		if err := waitEtcdHealthy(ctx, m); err != nil {
			t.Fatalf("etcd %s did not become healthy: %v\noutput:\n%s", m.Name, err, m.Process.Output())
		}
	}
	return c
}

// distinctFreePorts returns k different free loopback ports.
func distinctFreePorts(t testing.TB, k int) []int {
	t.Helper()
	seen := make(map[int]bool)
	var ports []int
	for len(ports) < k {
		p := FreePort(t)
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// waitEtcdHealthy polls the member's /health until it reports healthy.
func waitEtcdHealthy(ctx context.Context, m *EtcdMember) error {
	var last error
	for {
		select {
		case <-m.Process.Exited():
			return fmt.Errorf("process exited")
		default:
		}
		var h struct {
			Health string `json:"health"`
		}
		last = getJSON(ctx, http.MethodGet, m.ClientURL+"/health", &h)
		if last == nil && h.Health == "true" {
			return nil
		}
		if last == nil {
			last = fmt.Errorf("health is %q", h.Health)
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// getJSON sends a request with an empty JSON body and decodes the answer.
func getJSON(ctx context.Context, method, url string, v any) error {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(rctx, method, url, body)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// Alive reports whether the member's process still runs.
func (m *EtcdMember) Alive() bool {
	select {
	case <-m.Process.Exited():
		return false
	default:
		return true
	}
}

// etcdStatus is what a member's maintenance status says of it; the v3 JSON
// gateway prints 64-bit IDs as decimal strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

// status asks member m for its status.
func (m *EtcdMember) status(ctx context.Context) (etcdStatus, error) {
	var st etcdStatus
	if err := getJSON(ctx, http.MethodPost, m.ClientURL+"/v3/maintenance/status", &st); err != nil {
		return st, fmt.Errorf("status of %s: %w", m.Name, err)
	}
	return st, nil
}

// Leader returns the index in Members of the current leader, as reported by
// a running member that knows one. It waits for an election until ctx ends.
func (c *EtcdCluster) Leader(ctx context.Context) (int, error) {
	var last error = errors.New("no running member")
	for {
		for _, m := range c.Members {
			if !m.Alive() {
				continue
			}
			st, err := m.status(ctx)
			if err != nil {
				last = err
				continue
			}
			if st.Leader == "" || st.Leader == "0" {
				last = fmt.Errorf("%s knows no leader", m.Name)
				continue
			}
			if st.Header.MemberID == st.Leader {
				return slices.Index(c.Members, m), nil
			}
			if i := c.indexOf(ctx, st.Leader); i >= 0 {
				return i, nil
			}
			last = fmt.Errorf("leader %s named by %s is not a running member", st.Leader, m.Name)
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("find etcd leader: %w", errors.Join(ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// indexOf returns the index of the running member with the given ID.
func (c *EtcdCluster) indexOf(ctx context.Context, id string) int {
	for i, m := range c.Members {
		if !m.Alive() {
			continue
		}
		if st, err := m.status(ctx); err == nil && st.Header.MemberID == id {
			return i
		}
	}
	return -1
}

// KillLeader kills the current leader with SIGKILL and returns its index.
func (c *EtcdCluster) KillLeader(ctx context.Context) (int, error) {
	i, err := c.Leader(ctx)
	if err != nil {
		return -1, err
	}
	c.Members[i].Process.Kill()
	return i, nil
}
