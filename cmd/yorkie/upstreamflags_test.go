package main

import (
	"bytes"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What this server does with one of upstream's "yorkie server" flags.
type upstreamFlagStatus int

const (
	// served: same name, meaning and (unless diverges says why) default.
	served upstreamFlagStatus = iota
	// ignored: accepted with upstream's default, no effect here.
	ignored
	// refused: start-up stops naming the flag.
	refused
)

type upstreamFlag struct {
	name   string
	def    string // upstream's default, as the flag package prints it
	status upstreamFlagStatus
	// why says why our default differs from upstream's (served only).
	why string
}

// upstreamServerFlags are all the flags of upstream Yorkie 0.7.17's
// "yorkie server" (cmd/yorkie/server.go), in its order.
func upstreamServerFlags() []upstreamFlag {
	return []upstreamFlag{
		{"config", "", served, ""},
		{"c", "", served, ""},
		{"log-level", "info", served, ""},
		{"l", "info", served, ""},
		{"rpc-port", "8080", served, ""},
		{"rpc-cert-file", "", served, ""},
		{"rpc-key-file", "", served, ""},
		{"rpc-read-header-timeout", "5s", served, "ours 10s: slow mobile clients; --rpc-read-body-timeout bounds the rest"},
		{"rpc-idle-timeout", "2m0s", served, ""},
		{"profiling-port", "8081", served, ""},
		{"pprof-enabled", "false", served, ""},
		{"backend-admin-token-duration", "168h0m0s", served, ""},
		{"auth-github-client-id", "", served, ""},
		{"auth-github-client-secret", "", served, ""},
		{"auth-github-redirect-url", "http://localhost:8080/auth/github/callback", served, ""},
		{"auth-github-callback-redirect-url", "http://localhost:5173/dashboard", served, ""},
		{"auth-github-user-url", "https://api.github.com/user", served, ""},
		{"auth-github-auth-url", "https://github.com/login/oauth/authorize", served, ""},
		{"auth-github-token-url", "https://github.com/login/oauth/access_token", served, ""},
		{"auth-github-device-auth-url", "https://github.com/login/device/code", ignored, ""},
		{"housekeeping-interval", "30s", served, ""},
		{"housekeeping-candidates-limit", "2000", served, "ours 500: one run's deactivations stay short beside the calls it shares the node with"},
		{"housekeeping-deactivate-concurrency", "8", ignored, ""},
		{"housekeeping-compaction-min-changes", "1000", served, ""},
		{"housekeeping-project-stats-refresh-interval", "5m0s", ignored, ""},
		{"mongo-connection-uri", "", served, ""},
		{"mongo-connection-timeout", "5s", served, ""},
		{"mongo-yorkie-database", "yorkie-meta", served, ""},
		{"mongo-ping-timeout", "5s", ignored, ""},
		{"mongo-monitoring-enabled", "false", ignored, ""},
		{"mongo-monitoring-slow-query-threshold", "100ms", ignored, ""},
		{"mongo-cache-stats-enabled", "false", ignored, ""},
		{"mongo-project-cache-size", "256", ignored, ""},
		{"mongo-project-cache-ttl", "5m0s", served, "ours 10s: nodes learn an UpdateProject by expiry, not by a broadcast"},
		{"mongo-client-cache-size", "10000", ignored, ""},
		{"mongo-doc-cache-size", "10000", ignored, ""},
		{"mongo-change-cache-size", "10000", ignored, ""},
		{"mongo-vector-cache-size", "10000", ignored, ""},
		{"mongo-cache-stats-interval", "30s", ignored, ""},
		{"backend-admin-user", "admin", served, ""},
		{"backend-admin-password", "admin", served, ""},
		{"backend-secret-key", "yorkie-secret", served, "ours empty: a random secret the database keeps for the cluster, not a published one"},
		{"backend-use-default-project", "true", served, ""},
		{"backend-snapshot-disable-gc", "false", ignored, ""},
		{"snapshot-cache-size", "1000", ignored, ""},
		{"backend-enable-webhook-validation", "false", served, "ours refuses private, loopback and link-local webhook addresses unless told otherwise; upstream allows them"},
		{"auth-webhook-cache-size", "5000", served, ""},
		{"auth-webhook-cache-auth-ttl", "10s", served, ""},
		{"hostname", "", served, ""},
		{"backend-gateway-addr", "localhost:8080", ignored, ""},
		{"backend-rpc-addr", "localhost:8080", served, "ours empty: 127.0.0.1 and the RPC port actually bound, the same on one machine"},
		{"kafka-addresses", "", refused, ""},
		{"kafka-user-events-topic", "user-events", refused, ""},
		{"kafka-document-events-topic", "document-events", refused, ""},
		{"kafka-client-events-topic", "client-events", refused, ""},
		{"kafka-channel-events-topic", "channel-events", refused, ""},
		{"kafka-session-events-topic", "session-events", refused, ""},
		{"kafka-write-timeout", "5s", refused, ""},
		{"starrocks-dsn", "", refused, ""},
		{"channel-session-ttl", "15s", served, "ours 60s: the SDK's channel heartbeat comes every 30s"},
		{"channel-session-cleanup-interval", "10s", ignored, ""},
		{"channel-session-count-cache-ttl", "30s", ignored, ""},
		{"channel-session-count-cache-size", "10000", ignored, ""},
		{"cluster-rpc-timeout", "10s", ignored, ""},
		{"cluster-client-timeout", "30s", ignored, ""},
		{"cluster-client-pool-size", "1", ignored, ""},
		{"max-concurrent-cluster-rpcs", "5000", ignored, ""},
		{"cluster-secret", "", served, ""},
	}
}

// serverFlagDefaults reads the real flag set of "yorkie server" from its
// help: every flag name and the default it prints.
func serverFlagDefaults(t *testing.T) map[string]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"server", "-h"}, &stdout, &stderr))
	flags := map[string]string{}
	head := regexp.MustCompile(`^  -(\S+)`)
	def := regexp.MustCompile(`\(default (.*)\)$`)
	var last string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = ""
			continue
		}
		if m := def.FindStringSubmatch(line); m != nil && last != "" {
			flags[last] = strings.Trim(m[1], `"`)
		}
	}
	require.NotEmpty(t, flags)
	return flags
}

func TestEveryUpstreamServerFlag(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ours := serverFlagDefaults(t)
	list := upstreamServerFlags()
	require.Len(t, list, 68, "upstream 0.7.17 has 66 long flags and -c, -l")
	counts := map[upstreamFlagStatus]int{}
	for _, f := range list {
		t.Run(f.name, func(t *testing.T) {
			got, ok := ours[f.name]
			if f.def == "false" || f.def == "0" || f.def == "0s" {
				f.def = "" // the help prints no zero default
			}
			status := f.status
			counts[status]++
			require.True(t, ok, "--%s is not a flag of yorkie server", f.name)
			switch status {
			case served:
				if f.why != "" {
					assert.NotEqual(t, f.def, got, "--%s now has upstream's default: drop the divergence note", f.name)
					return
				}
				assert.Equal(t, f.def, got, "default of --%s", f.name)
			case ignored:
				assert.Equal(t, f.def, got, "default of --%s", f.name)
			case refused:
				var stdout, stderr bytes.Buffer
				code := run([]string{"server", "--" + f.name, "x"}, &stdout, &stderr)
				assert.Equal(t, 2, code)
				assert.Contains(t, stderr.String(), "--"+f.name+": ")
				assert.Contains(t, stderr.String(), "remove the flag")
			}
		})
	}
	t.Logf("upstream flags: %d served, %d accepted with no effect, %d refused",
		counts[served], counts[ignored], counts[refused])
}

// Start-up errors that name what is wrong, before anything listens.
func TestServerFlagErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-l", "loud"}, `--log-level "loud": want debug, info, warn, error, panic or fatal`},
		{[]string{"--rpc-addr", "127.0.0.1:8080"}, "without a port"},
		{[]string{"--rpc-addr", "a b"}, "want a host name or IP address"},
		{[]string{"--starrocks-dsn", "dsn"}, "--starrocks-dsn: this server writes no analytics to StarRocks"},
		{[]string{"--kafka-addresses", "k:9092"}, "--kafka-addresses: this server publishes no analytics events to Kafka"},
		{[]string{"--mongo-yorkie-database"}, "flag needs an argument"},
		{[]string{"--rpc-max-inflight-request-bytes", "0"}, "--rpc-max-inflight-request-bytes 0: want at least twice --rpc-max-request-bytes (67108864)"},
		{[]string{"--rpc-max-request-bytes", "1000", "--rpc-max-inflight-request-bytes", "1999"}, "want at least twice --rpc-max-request-bytes (2000)"},
		{[]string{"--rpc-max-request-bytes", "0"}, "--rpc-max-request-bytes must be positive"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"server"}, tc.args...), &stdout, &stderr), "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
}

func TestIgnoredFlagsGiven(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	registerIgnoredUpstreamFlags(fs)
	fs.Int("rpc-port", 0, "")
	require.NoError(t, fs.Parse([]string{"--rpc-port", "1", "--backend-gateway-addr", "gw:80", "--mongo-doc-cache-size", "5"}))
	given := ignoredFlagsGiven(fs)
	require.Len(t, given, 2)
	assert.Equal(t, "--backend-gateway-addr", given[0][0])
	assert.Contains(t, given[0][1], "forwarded to the owner directly")
	assert.Equal(t, "--mongo-doc-cache-size", given[1][0])
}

func TestParseLogLevel(t *testing.T) {
	prev := -100
	for _, name := range []string{"debug", "info", "WARN", "error", "panic", "fatal"} {
		level, err := parseLogLevel(name)
		require.NoError(t, err, name)
		assert.Greater(t, int(level), prev, "%s is above the level before it", name)
		prev = int(level)
	}
}

func TestRPCHost(t *testing.T) {
	for in, want := range map[string]string{"": "", "127.0.0.1": "127.0.0.1", "::1": "::1", "[::1]": "::1", "localhost": "localhost"} {
		got, err := rpcHost(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"localhost:80", "[::1]:80", "a/b", "fe80::zz"} {
		_, err := rpcHost(in)
		assert.Error(t, err, in)
	}
}
