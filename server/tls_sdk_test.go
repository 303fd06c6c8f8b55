package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/certfile/certtest"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// sdkResult is the last line tls_sdk.cjs prints.
type sdkResult struct {
	Rounds   int      `json:"rounds"`
	JSON     string   `json:"json"`
	Refused  string   `json:"refused"`
	Error    string   `json:"error"`
	Failures []string `json:"failures"`
}

// nodeSDK returns the node binary and the SDK's node_modules, or skips the
// test when they are missing (fails it under YORKIE_TEST_REQUIRE_SERVERS=1).
func nodeSDK(t *testing.T) (node, modules string) {
	t.Helper()
	missing := func(why string) { testenv.Unavailable(t, "the JS SDK test cannot run: %s", why) }
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not found")
	}
	modules, err = filepath.Abs(filepath.Join("..", "test", "e2e", "node_modules"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(modules, "@yorkie-js", "sdk")); err != nil {
		missing("run npm ci in test/e2e")
	}
	return node, modules
}

// TestJSSDKOverTLS: the JS SDK on Node, trusting the test CA through
// NODE_EXTRA_CA_CERTS, syncs over https (the fast HTTP/1.1 loop, Watch
// streams handed to net/http) and converges; the certificate is replaced
// while two clients sync, with no failed call, and a third client connects
// with the new one. Without the CA the SDK is refused at activation.
func TestJSSDKOverTLS(t *testing.T) {
	node, modules := nodeSDK(t)
	srv, pool, files, ca := startTLS(t, func(c *server.Config) { c.CertCheckInterval = 10 * time.Millisecond })
	caFile := ca.WriteCA(t, t.TempDir(), "ca")
	key := wire.UniqueKey(t, "tls-sdk")

	cmd := exec.Command(node, filepath.Join("testdata", "tls_sdk.cjs"), servertest.TLSBaseURL(srv), key)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "NODE_EXTRA_CA_CERTS="+caFile)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var last string
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the SDK script ended before %q; last line %q; stderr:\n%s", prefix, last, stderr.String())
				}
				last = line
				t.Logf("sdk: %s", line)
				if strings.HasPrefix(line, prefix) {
					return line
				}
			case <-timeout:
				t.Fatalf("no %q from the SDK script within a minute; last line %q; stderr:\n%s", prefix, last, stderr.String())
			}
		}
	}
	next("ready")
	next("synced")
	before := serialOf(t, srv.RPCAddr(), pool)
	_, rotated := ca.WriteLeaf(t, filepath.Dir(files.Cert), "rpc", certtest.Leaf{})
	poll.UntilTrue(t, 30*time.Second, "new connections get the new certificate", func() bool {
		return serialOf(t, srv.RPCAddr(), pool).Cmp(rotated) == 0
	})
	next("synced") // the clients go on syncing
	_, err = io.WriteString(stdin, "rotated\n")
	require.NoError(t, err)
	result := next("{")
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())

	var res sdkResult
	require.NoError(t, json.Unmarshal([]byte(result), &res))
	assert.Empty(t, res.Error)
	assert.Empty(t, res.Failures, "no call failed during the rotation")
	assert.Contains(t, res.JSON, `"c":"after rotation"`)
	assert.Positive(t, res.Rounds)
	assert.NotEqual(t, 0, before.Cmp(rotated))
	assert.Positive(t, counter(t, srv, "yorkie_rpc_http1_fast_requests_total"), "the fast loop served the SDK over TLS")

	// Without the CA, Node refuses the server's certificate.
	untrusted := exec.Command(node, filepath.Join("testdata", "tls_sdk.cjs"), servertest.TLSBaseURL(srv), key, "untrusted")
	untrusted.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := untrusted.Output()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(out[strings.LastIndex(strings.TrimSpace(string(out)), "\n")+1:], &res))
	assert.Contains(t, res.Refused, "certificate")
}
