package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// testFlagSet is a small flag set shaped like the server's: ours and
// upstream's name of one setting, a list, a switch.
func testFlagSet() (*flag.FlagSet, *int, *string, *string, *bool) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	port := fs.Int("rpc-port", 8080, "")
	db := stringFlag(fs, []string{"mongo-database", "mongo-yorkie-database"}, "yorkie-meta", "")
	endpoints := fs.String("etcd-endpoints", "http://127.0.0.1:2379", "")
	pprof := fs.Bool("pprof-enabled", false, "")
	fs.Int("max-changes-per-pack", 1000, "")
	registerRefusedFlags(fs)
	return fs, port, db, endpoints, pprof
}

func TestApplyConfig(t *testing.T) {
	fs, port, db, endpoints, pprof := testFlagSet()
	require.NoError(t, fs.Parse([]string{"--mongo-yorkie-database", "from-flag"}))
	warnings, err := applyConfig(fs, []byte(`
RPC:
  Port: 9090
  CertFile: ""
  Auth:
    GitHubAuthURL: "https://github.com/login/oauth/authorize"
Profiling:
  PprofEnabled: true
Mongo:
  YorkieDatabase: from-file
Membership:
  LeaseDuration: 15s
SessionStore:
  EtcdEndpoints: [http://a:2379, http://b:2379]
Kafka:
  Addresses: "k:9092"
  UserEventsTopic: user-events
Flags:
  max-changes-per-pack: 7
`))
	require.NoError(t, err)
	assert.Equal(t, 9090, *port)
	assert.True(t, *pprof)
	assert.Equal(t, "from-flag", *db, "a flag given under upstream's name beats the file's key for ours")
	assert.Equal(t, "http://a:2379,http://b:2379", *endpoints)
	assert.Equal(t, "7", fs.Lookup("max-changes-per-pack").Value.String())
	assert.Equal(t, []string{"Kafka.Addresses: this server publishes no analytics events to Kafka; the setting is ignored"}, warnings)
}

func TestApplyConfigErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"RPC:\n  Prot: 1\n", "RPC.Prot (line 2): unknown key; RPC has "},
		{"Rpc:\n  Port: 1\n", "Rpc (line 1): unknown section"},
		{"RPC:\n  Port: eighty\n", `RPC.Port (line 2): invalid value "eighty"`},
		{"RPC:\n  Port: [1, 2]\n", "invalid value"},
		{"RPC:\n  Port:\n    x: 1\n", "RPC.Port (line 3): want a value, not a section"},
		{"RPC: 8080\n", "RPC (line 1): want keys under the section"},
		{"RPC:\n  CertFile: /etc/cert.pem\n", "RPC.CertFile (line 2): not supported by this server yet (upstream's --rpc-cert-file)"},
		{"Flags:\n  no-such-flag: 1\n", "Flags.no-such-flag (line 2): --no-such-flag is not a flag of this server"},
		{"Flags:\n  kafka-addresses: k\n", "--kafka-addresses is not supported"},
		{"RPC:\n  Port: 1\n  Port: 2\n", "RPC.Port (line 3): set twice"},
		{"RPC:\n  Port: 1\nRPC:\n  Port: 2\n", "RPC (line 3): set twice"},
		{"- a\n- b\n", "want sections"},
		{"RPC: [\n", "not YAML"},
	} {
		fs, _, _, _, _ := testFlagSet()
		require.NoError(t, fs.Parse(nil))
		_, err := applyConfig(fs, []byte(tc.file))
		require.Error(t, err, tc.file)
		assert.Contains(t, err.Error(), tc.want, tc.file)
	}
	fs, _, _, _, _ := testFlagSet()
	warnings, err := applyConfig(fs, nil)
	assert.NoError(t, err, "an empty file sets nothing")
	assert.Empty(t, warnings)
}

// The server refuses a bad file before it listens, naming the file and key.
func TestServerConfigFileErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "bad.yml")
	require.NoError(t, os.WriteFile(path, []byte("Backend:\n  AdminTokenDuration: forever\n"), 0o600))
	for _, args := range [][]string{{"--config", path}, {"-c", path}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(append([]string{"server"}, args...), &stdout, &stderr))
		assert.Contains(t, stderr.String(), "--config "+path+": Backend.AdminTokenDuration (line 2): invalid value \"forever\"")
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"server", "-c", path + ".missing"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no such file")
}

// Every key of our config.sample.yml sets a flag of the server (or is one
// of upstream's accepted ones), to the default that flag has: the sample
// says what a server without it does.
func TestSampleConfigIsTheDefaults(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	data, err := os.ReadFile(filepath.Join("..", "..", "server", "config.sample.yml"))
	require.NoError(t, err)
	var sample map[string]map[string]any
	require.NoError(t, yaml.Unmarshal(data, &sample))
	defaults := serverFlagDefaults(t)
	sections := configSections()
	checked := 0
	for section, keys := range sample {
		for key, value := range keys {
			ck, ok := sections[section][key]
			require.True(t, ok, "%s.%s is no key of ours", section, key)
			if ck.flag == "" {
				continue
			}
			got, ok := defaults[ck.flag]
			if !ok {
				assert.Contains(t, []string{"", ck.upstreamDefault}, value, "%s.%s: --%s is not registered yet", section, key, ck.flag)
				continue
			}
			want := strings.Trim(strings.ReplaceAll(strings.Trim(yamlText(value), "[]"), " ", ","), " ")
			if want == "false" || want == "0s" || want == "0" {
				want = ""
			}
			if ck.flag == "node-ttl" || ck.flag == "advertise-addr" || ck.flag == "backend-rpc-addr" { // defaults told in words
				assert.Equal(t, "", want)
				continue
			}
			assert.Equal(t, want, got, "%s.%s (--%s)", section, key, ck.flag)
			checked++
		}
	}
	assert.Greater(t, checked, 50)
}

func yamlText(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if strings.HasPrefix(s, "- ") {
		return "[" + strings.TrimPrefix(s, "- ") + "]"
	}
	return strings.Trim(s, `"'`)
}
