package cli_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// startYorkie runs bin/yorkie with args as they are and waits for addr.
func startYorkie(t *testing.T, bin, addr string, args ...string) *testenv.Process {
	t.Helper()
	p := testenv.StartProcess(t, "yorkie", bin, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testenv.WaitListening(ctx, addr); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	return p
}

// The sample config we ship starts a server as it is.
func TestServerWithOurSampleConfig(t *testing.T) {
	bin := yorkieBinary(t)
	addr := startServer(t, bin, "--config", filepath.Join("..", "..", "server", "config.sample.yml"))
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	c.ok("login", "--username", "admin", "--password", "admin", "--rpc-addr", addr, "--insecure")
}

// upstreamLayoutConfig is a file with every section and key of upstream
// Yorkie 0.7.17's server/config.sample.yml, set to upstream's sample values
// except the MongoDB address and the admin account, which the test
// chooses.
const upstreamLayoutConfig = `
RPC:
  Port: 8080
  CertFile: ""
  KeyFile: ""
  ReadHeaderTimeout: "5s"
  IdleTimeout: "2m"
  Auth:
    GitHubClientID: ""
    GitHubClientSecret: ""
    GitHubRedirectURL: "http://localhost:8080/auth/github/callback"
    GitHubCallbackRedirectURL: "http://localhost:5173/dashboard"
    GitHubAuthURL: "https://github.com/login/oauth/authorize"
    GitHubTokenURL: "https://github.com/login/oauth/access_token"
    GitHubDeviceAuthURL: "https://github.com/login/device/code"
    GitHubUserURL: "https://api.github.com/user"
Profiling:
  Port: 8081
  PprofEnabled: false
Membership:
  LeaseDuration: "15s"
  RenewalInterval: "5s"
Housekeeping:
  Interval: "30s"
  CandidatesLimit: 2000
  DeactivateConcurrency: 8
  CompactionMinChanges: 1000
Backend:
  AdminUser: "ops"
  AdminPassword: "upstream-pw"
  SecretKey: ""
  AdminTokenDuration: "168h0m0s"
  UseDefaultProject: true
  SnapshotDisableGC: false
  SnapshotCacheSize: 1000
  AuthWebhookCacheSize: 5000
  AuthWebhookCacheTTL: "10s"
  ProjectCacheSize: 256
  ProjectCacheTTL: "10m0s"
  Hostname: ""
  GatewayAddr: "localhost:8080"
  ClusterSecret: ""
Mongo:
  ConnectionTimeout: "5s"
  ConnectionURI: "MONGO_URI"
  YorkieDatabase: "MONGO_DATABASE"
  PingTimeout: "5s"
  MonitoringEnabled: true
  MonitoringSlowQueryThreshold: "100ms"
  CacheStatsEnabled: false
  CacheStatsInterval: "30s"
  ClientCacheSize: 10000
  DocCacheSize: 10000
  ChangeCacheSize: 10000
  VectorCacheSize: 10000
Kafka:
  Addresses: "localhost:29092,localhost:29093"
  UserEventsTopic: "user-events"
  DocumentEventsTopic: "document-events"
  ClientEventsTopic: "client-events"
  ChannelEventsTopic: "channel-events"
  SessionEventsTopic: "session-events"
  WriteTimeout: "5s"
StarRocks:
  DSN: ""
`

// An upstream config file works as it is: its MongoDB and admin account
// are used, the Kafka section is logged as ignored, and flags (the ports)
// override the file.
func TestServerWithUpstreamConfigFile(t *testing.T) {
	bin := yorkieBinary(t)
	mongo := testenv.MongoURI(t)
	mongo.DropWhenDone(t, mongo.Database)
	file := strings.NewReplacer("MONGO_URI", mongo.URI, "MONGO_DATABASE", mongo.Database).Replace(upstreamLayoutConfig)
	path := filepath.Join(t.TempDir(), "config.yml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))

	port := testenv.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := startYorkie(t, bin, addr, "server", "-c", path, "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1")
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	c.ok("login", "--username", "ops", "--password", "upstream-pw", "--rpc-addr", addr, "--insecure")
	c.ok("project", "create", "from-upstream-config")
	assert.Contains(t, c.ok("project", "ls"), "from-upstream-config")

	// The log says what the file sets that does nothing here, and what
	// upstream's project cache TTL costs.
	for _, want := range []string{
		"config file: Kafka.Addresses: this server publishes no analytics events to Kafka",
		"project cache TTL above a minute",
	} {
		poll.UntilTrue(t, 30*time.Second, "log line "+want, func() bool { return strings.Contains(p.Output(), want) })
	}
}

// upstream's yorkie-cluster Helm chart (build/charts/yorkie-cluster, v0.7.17)
// rendered by hand with its default values.yaml: the container's args, with
// the MongoDB URI, $(POD_IP) and the ports of this machine's test servers.
func helmChartArgs(mongoURI, mongoDatabase, podIP string, rpcPort, profilingPort int) []string {
	return []string{
		"server",
		"--mongo-connection-uri", mongoURI,
		"--mongo-yorkie-database", mongoDatabase,
		"--pprof-enabled",
		"--rpc-port", strconv.Itoa(rpcPort),
		"--profiling-port", strconv.Itoa(profilingPort),
		"--backend-gateway-addr", "yorkie-gateway.yorkie.svc.cluster.local",
		"--backend-rpc-addr", podIP + ":" + strconv.Itoa(rpcPort),
		"--backend-use-default-project=false",
		"--log-level", "info",
	}
}

func TestServerWithHelmChartArgs(t *testing.T) {
	bin := yorkieBinary(t)
	mongo := testenv.MongoURI(t)
	mongo.DropWhenDone(t, mongo.Database)
	rpcPort, profilingPort := testenv.FreePort(t), testenv.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(rpcPort)
	startYorkie(t, bin, addr, helmChartArgs(mongo.URI, mongo.Database, "127.0.0.1", rpcPort, profilingPort)...)

	// --backend-use-default-project=false: a client without an API key is
	// refused.
	yc := v1connect.NewYorkieServiceClient(http.DefaultClient, "http://"+addr)
	_, err := yc.ActivateClient(context.Background(), connect.NewRequest(&api.ActivateClientRequest{ClientKey: "helm"}))
	assert.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "%v", err)

	// --pprof-enabled on --profiling-port.
	res, err := http.Get("http://127.0.0.1:" + strconv.Itoa(profilingPort) + "/debug/pprof/")
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	// The data is in the chart's database.
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	c.ok("login", "--username", "admin", "--password", "admin", "--rpc-addr", addr, "--insecure")
	c.ok("project", "create", "helm")
}

// --rpc-addr binds the RPC port to one address.
func TestServerRPCAddr(t *testing.T) {
	bin := yorkieBinary(t)
	port := testenv.FreePort(t)
	startYorkie(t, bin, "127.0.0.1:"+strconv.Itoa(port), "server", "--rpc-addr", "127.0.0.1", "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1")
	// Another loopback address of the machine is not served.
	_, err := http.Get("http://127.0.0.2:" + strconv.Itoa(port) + "/healthz")
	require.Error(t, err)
	res, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
}

// --rpc-idle-timeout closes a keep-alive connection that sends nothing
// more, on the fast HTTP/1.1 loop and on net/http alike.
func TestServerRPCIdleTimeout(t *testing.T) {
	bin := yorkieBinary(t)
	for _, fast := range []string{"true", "false"} {
		port := testenv.FreePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		startYorkie(t, bin, addr, "server", "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1",
			"--rpc-idle-timeout", "100ms", "--rpc-fast-http1="+fast)
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode)
		// The server closes the idle connection (the deadline only bounds a
		// broken server).
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		_, err = conn.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "fast HTTP/1.1 loop %s", fast)
	}
}
