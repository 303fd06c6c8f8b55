// Package cli_test drives the yorkie command's admin subcommands against a
// running yorkie server process, as an operator would.
package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// binEnv names the yorkie binary (default: bin/yorkie at the repository root).
const binEnv = "YORKIE_BIN"

func yorkieBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(binEnv); bin != "" {
		return bin
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module github.com/yorkie-affinity/yorkie\n") {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repository root not found")
		}
		dir = parent
	}
	bin := filepath.Join(dir, "bin", "yorkie")
	if _, err := os.Stat(bin); err != nil {
		testenv.Unavailable(t, "yorkie binary not built (go build -o bin/yorkie ./cmd/yorkie), or set %s: %v", binEnv, err)
	}
	return bin
}

// cli runs the yorkie command with its own config directory.
type cli struct {
	t      *testing.T
	bin    string
	config string
}

// run runs the command and returns its stdout, stderr and exit code.
func (c *cli) run(args ...string) (string, string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+c.config, "HOME="+c.config)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			c.t.Fatalf("run yorkie %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

// ok runs the command, fails the test unless it succeeds, and returns stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("yorkie %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
	}
	return out
}

// fails runs the command, wants a failure and returns stderr.
func (c *cli) fails(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code == 0 {
		c.t.Fatalf("yorkie %v succeeded: %s", args, out)
	}
	return errOut
}

// startServer runs bin/yorkie server on a free port and returns its address.
func startServer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	port := testenv.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := testenv.StartProcess(t, "yorkie", bin, append([]string{"server", "--rpc-port", strconv.Itoa(port), "--profiling-port", "-1"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testenv.WaitListening(ctx, addr); err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	return addr
}

// project is a project as upstream's CLI prints it in JSON: its tagged
// fields in snake case, the others under their Go names.
type project struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	PublicKey          string   `json:"public_key"`
	SecretKey          string   `json:"secret_key"`
	AuthWebhookURL     string   `json:"auth_webhook_url"`
	AuthWebhookMethods []string `json:"auth_webhook_methods"`
	EventWebhookURL    string   `json:"event_webhook_url"`
	EventWebhookEvents []string `json:"event_webhook_events"`
	MaxAttachments     int      `json:"MaxAttachmentsPerDocument"`
	MaxSubscribers     int      `json:"MaxSubscribersPerDocument"`
	MaxSize            int      `json:"MaxSizePerDocument"`
	RemoveOnDetach     bool     `json:"remove_on_detach"`
	Threshold          string   `json:"ClientDeactivateThreshold"`
	AuthRetries        uint64   `json:"AuthWebhookMaxRetries"`
	AuthMinWait        string   `json:"AuthWebhookMinWaitInterval"`
	AuthMaxWait        string   `json:"AuthWebhookMaxWaitInterval"`
	AuthTimeout        string   `json:"AuthWebhookRequestTimeout"`
	EventRetries       uint64   `json:"EventWebhookMaxRetries"`
	EventMinWait       string   `json:"EventWebhookMinWaitInterval"`
	EventMaxWait       string   `json:"EventWebhookMaxWaitInterval"`
	EventTimeout       string   `json:"EventWebhookRequestTimeout"`
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return v
}

func TestCLIAgainstServer(t *testing.T) {
	bin := yorkieBinary(t)
	addr := startServer(t, bin, "--auth-admin-user", "root", "--auth-admin-password", "pa55-word!")
	c := &cli{t: t, bin: bin, config: t.TempDir()}

	// Before logging in, admin commands say how to.
	if e := c.fails("project", "ls", "--rpc-addr", addr); !strings.Contains(e, "yorkie login") {
		t.Fatalf("project ls before login: %s", e)
	}
	if e := c.fails("login", "--username", "root", "--password", "wrong", "--rpc-addr", addr, "--insecure"); !strings.Contains(e, "unauthenticated") {
		t.Fatalf("login with a wrong password: %s", e)
	}
	c.ok("login", "--username", "root", "--password", "pa55-word!", "--rpc-addr", addr, "--insecure")

	// The token is kept per server address, in upstream's file format.
	conf := decode[struct {
		Auths   map[string]struct{ Token string } `json:"auths"`
		RPCAddr string                            `json:"rpcAddr"`
	}](t, readFile(t, filepath.Join(c.config, ".yorkie", "config.json")))
	if conf.RPCAddr != addr || conf.Auths[addr].Token == "" {
		t.Fatalf("config after login: %+v", conf)
	}

	created := decode[project](t, c.ok("project", "create", "app"))
	if created.Name != "app" || created.PublicKey == "" || created.SecretKey == "" {
		t.Fatalf("created %+v", created)
	}
	if e := c.fails("project", "create", "app"); !strings.Contains(e, "already_exists") {
		t.Fatalf("duplicate create: %s", e)
	}

	table := c.ok("project", "ls")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || strings.Fields(lines[0])[0] != "NAME" || strings.Fields(lines[1])[0] != "default" ||
		strings.Fields(lines[2])[0] != "app" || !strings.Contains(lines[2], created.PublicKey) {
		t.Fatalf("project ls:\n%s", table)
	}

	updated := decode[project](t, c.ok("project", "update", "app",
		"--name", "app-2",
		"--auth-webhook-url", "http://127.0.0.1:9/auth",
		"--auth-webhook-method-add", "AttachDocument", "--auth-webhook-method-add", "PushPull",
		"--event-webhook-url", "http://127.0.0.1:9/events",
		"--event-webhook-events-add", "DocumentRootChanged",
		"--max-attachments-per-document", "7"))
	if updated.Name != "app-2" || updated.AuthWebhookURL != "http://127.0.0.1:9/auth" ||
		strings.Join(updated.AuthWebhookMethods, ",") != "AttachDocument,PushPull" ||
		updated.EventWebhookURL != "http://127.0.0.1:9/events" || strings.Join(updated.EventWebhookEvents, ",") != "DocumentRootChanged" ||
		updated.MaxAttachments != 7 || updated.SecretKey != created.SecretKey {
		t.Fatalf("updated %+v", updated)
	}
	// Removing a method keeps the others.
	again := decode[project](t, c.ok("project", "update", "app-2", "--auth-webhook-method-rm", "PushPull"))
	if strings.Join(again.AuthWebhookMethods, ",") != "AttachDocument" || again.AuthWebhookURL != updated.AuthWebhookURL {
		t.Fatalf("after removing a method: %+v", again)
	}
	if e := c.fails("project", "update", "nope", "--name", "x-y"); !strings.Contains(e, "not_found") {
		t.Fatalf("update of an unknown project: %s", e)
	}
	if e := c.fails("project", "update", "app-2", "--auth-webhook-url", "ftp://x"); !strings.Contains(e, "invalid_argument") {
		t.Fatalf("update with a bad URL: %s", e)
	}

	list := decode[[]project](t, c.ok("project", "ls", "--output", "json"))
	if len(list) != 2 || list[0].Name != "default" || list[1].Name != "app-2" || list[1].AuthWebhookURL != updated.AuthWebhookURL {
		t.Fatalf("project ls --output json: %+v", list)
	}

	version := c.ok("version")
	if !strings.Contains(version, "Yorkie Client: ") || !strings.Contains(version, "Yorkie Server: ") {
		t.Fatalf("version:\n%s", version)
	}

	c.ok("logout")
	if e := c.fails("project", "ls", "--rpc-addr", addr); !strings.Contains(e, "yorkie login") {
		t.Fatalf("project ls after logout: %s", e)
	}
	// Without a token, version prints this command's and says why the
	// server's is missing.
	out, errOut, code := c.run("version", "--rpc-addr", addr)
	if code != 0 || !strings.HasPrefix(out, "Yorkie Client: ") || strings.Contains(out, "Yorkie Server") || !strings.Contains(errOut, "not logged in") {
		t.Fatalf("version after logout: %d %q %q", code, out, errOut)
	}
}

// TestCLIProjectLimits sets every limit and webhook call setting with
// `yorkie project update`, then checks that a limit set on the default
// project holds for clients of the running server at once.
func TestCLIProjectLimits(t *testing.T) {
	bin := yorkieBinary(t)
	addr := startServer(t, bin)
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	c.ok("login", "--username", "admin", "--password", "admin", "--rpc-addr", addr, "--insecure")
	c.ok("project", "create", "limited")
	got := decode[project](t, c.ok("project", "update", "limited",
		"--max-subscribers-per-document", "3",
		"--max-attachments-per-document", "4",
		"--max-size-per-document", "65536",
		"--remove-on-detach",
		"--client-deactivate-threshold", "2h",
		"--auth-webhook-max-retries", "5",
		"--auth-webhook-min-wait-interval", "200ms",
		"--auth-webhook-max-wait-interval", "4s",
		"--auth-webhook-request-timeout", "2s",
		"--event-webhook-max-retries", "6",
		"--event-webhook-min-wait-interval", "300ms",
		"--event-webhook-max-wait-interval", "5s",
		"--event-webhook-request-timeout", "1s"))
	want := project{
		ID: got.ID, Name: "limited", PublicKey: got.PublicKey, SecretKey: got.SecretKey,
		MaxSubscribers: 3, MaxAttachments: 4, MaxSize: 65536, RemoveOnDetach: true, Threshold: "2h",
		AuthRetries: 5, AuthMinWait: "200ms", AuthMaxWait: "4s", AuthTimeout: "2s",
		EventRetries: 6, EventMinWait: "300ms", EventMaxWait: "5s", EventTimeout: "1s",
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("after update:\n got %+v\nwant %+v", got, want)
	}
	// A flag left out keeps its value; false turns a switch off.
	got = decode[project](t, c.ok("project", "update", "limited", "--remove-on-detach=false", "--max-attachments-per-document", "0"))
	if got.RemoveOnDetach || got.MaxAttachments != 0 || got.MaxSubscribers != 3 || got.AuthTimeout != "2s" {
		t.Fatalf("after the second update: %+v", got)
	}
	if e := c.fails("project", "update", "limited", "--auth-webhook-request-timeout", "soon"); !strings.Contains(e, "invalid_argument") {
		t.Fatalf("update with a bad timeout: %s", e)
	}

	// The default project serves clients that send no API key: a limit set
	// on it holds for them at once.
	c.ok("project", "update", "default", "--max-attachments-per-document", "1")
	yc := v1connect.NewYorkieServiceClient(servertest.HTTPClient(t, servertest.ConnectJSON), "http://"+addr)
	docKey := wire.UniqueKey(t, "cli-limited")
	first := wire.NewReplica(t, yc)
	first.MustAttach(docKey)
	second := wire.NewReplica(t, yc)
	_, err := second.Attach(wire.Context(t), docKey)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || wire.ErrorInfo(err)["code"] != "ErrTooManyAttachments" {
		t.Fatalf("second attach under the CLI's limit: %v, want resource_exhausted ErrTooManyAttachments", err)
	}
	c.ok("project", "update", "default", "--max-attachments-per-document", "0")
	second.MustAttach(docKey)
}

// TestCLIVersionWithoutServer: nothing listens, and version still prints
// this command's version.
func TestCLIVersionWithoutServer(t *testing.T) {
	bin := yorkieBinary(t)
	c := &cli{t: t, bin: bin, config: t.TempDir()}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	out, errOut, code := c.run("version", "--rpc-addr", addr)
	if code != 0 || !strings.HasPrefix(out, "Yorkie Client: ") || errOut == "" {
		t.Fatalf("version without a server: %d %q %q", code, out, errOut)
	}
	if out := c.ok("version", "--client"); strings.Count(out, "\n") != 3 {
		t.Fatalf("version --client: %q", out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
