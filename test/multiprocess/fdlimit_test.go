package multiprocess_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestServesAgainAfterDescriptorExhaustion runs a server under a low
// descriptor limit, fills every descriptor with idle connections, closes
// them, and expects the server to answer again: accept errors such as
// EMFILE pass, they must not stop the accept loop.
func TestServesAgainAfterDescriptorExhaustion(t *testing.T) {
	bin := yorkieBinary(t)
	const fdLimit = 64
	port := testenv.FreePort(t)
	// A long header timeout: only the closed connections may free the
	// descriptors, not the server timing them out.
	p := testenv.StartProcess(t, "yorkie-fdlimit", "/bin/sh", "-c",
		fmt.Sprintf(`ulimit -n %d && exec "$@"`, fdLimit), "sh",
		bin, "server", "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1",
		"--log-level", "warn", "--rpc-read-header-timeout", "10m")
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := waitHealthy(ctx, url, p); err != nil {
		t.Fatalf("server did not start: %v", err)
	}

	// More connections than descriptors: the kernel completes them all into
	// the listen backlog; the server accepts until it runs out.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range 2 * fdLimit {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
	}
	for !strings.Contains(p.Output(), "too many open files") {
		select {
		case <-ctx.Done():
			t.Fatalf("the server never ran out of descriptors:\n%s", p.Output())
		case <-p.Exited():
			t.Fatalf("the server exited:\n%s", p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	closed := time.Now()

	if err := waitHealthy(ctx, url, p); err != nil {
		t.Fatalf("the server does not answer after the connections closed: %v\n%s", err, p.Output())
	}
	t.Logf("answering again %v after the idle connections closed", time.Since(closed).Round(time.Millisecond))
	c := v1connect.NewYorkieServiceClient(http.DefaultClient, url)
	if _, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "after-exhaustion"})); err != nil {
		t.Fatalf("activate after the exhaustion: %v", err)
	}
}
