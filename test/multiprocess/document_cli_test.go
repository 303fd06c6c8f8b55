package multiprocess_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/admin/docview"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// runCLI runs the yorkie binary with args and returns its stdout, stderr and
// exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(wire.Context(t), yorkieBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("run yorkie %v: %v", args, err)
	return "", "", 0
}

// editRoot records n changes of r that each set one integer key on the root
// object, naming the root by its ticket as the SDK does (the all-zero
// actor's 12 bytes), and adds the keys they set to root.
func editRoot(r *wire.Replica, n int, root map[string]any) {
	for range n {
		ch := r.NewChange(nil)
		ch.GetOperations()[0].GetSet().ParentCreatedAt = &api.TimeTicket{ActorId: make([]byte, 12)}
		root[r.SetKey(ch.GetId().GetClientSeq())] = float64(ch.GetId().GetClientSeq())
	}
}

func TestDocumentGetCommand(t *testing.T) {
	s := StartServer(t, ServerOptions{Name: "yorkie-admin"})
	c := s.Client(t)
	a, b := wire.NewReplica(t, c), wire.NewReplica(t, c)
	key := wire.UniqueKey(t, "doc")
	a.MustAttach(key)
	b.MustAttach(key)
	want := map[string]any{}
	editRoot(a, 3, want)
	a.MustPushPull()
	editRoot(b, 4, want)
	b.MustPushPull()
	addr := "http://127.0.0.1:" + strconv.Itoa(s.ProfilingPort)
	login, err := v1connect.NewAdminServiceClient(http.DefaultClient, s.URL()).LogIn(wire.Context(t),
		connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	wire.Must(t, err, "log in")
	token := login.Msg.Token

	// The flag may come after the key or before it.
	for _, args := range [][]string{
		{"document", "get", key, "--addr", addr, "--token", token},
		{"document", "get", "--addr", addr, "--token", token, key},
	} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("yorkie %v: exit %d, stderr %s", args, code, stderr)
		}
		if !strings.Contains(stdout, "\n  \"root\": {\n") {
			t.Errorf("output is not indented JSON:\n%s", stdout)
		}
		var view docview.DocumentView
		wire.Must(t, json.Unmarshal([]byte(stdout), &view), "decode output")
		var root map[string]any
		wire.Must(t, json.Unmarshal(view.Root, &root), "decode root")
		if view.Key != key || view.ID != a.DocID || view.ServerSeq != 9 || view.Removed || !reflect.DeepEqual(root, want) {
			t.Errorf("yorkie %v printed key %q id %q server_seq %d removed %v root %s; want %q %q 9 false %v",
				args, view.Key, view.ID, view.ServerSeq, view.Removed, view.Root, key, a.DocID, want)
		}
	}

	unknown := wire.UniqueKey(t, "never-used")
	stdout, stderr, code := runCLI(t, "document", "get", unknown, "--addr", addr, "--token", token)
	if code != 1 || stdout != "" || !strings.Contains(stderr, `no document with key "`+unknown+`"`) {
		t.Errorf("unknown key: exit %d, stdout %q, stderr %q; want 1 and a message naming the key", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "document", "get", "not a key", "--addr", addr, "--token", token)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "invalid_key") {
		t.Errorf("invalid key: exit %d, stdout %q, stderr %q; want 1 and invalid_key", code, stdout, stderr)
	}

	// Without a valid admin token nothing is shown.
	stdout, stderr, code = runCLI(t, "document", "get", key, "--addr", addr, "--token", "forged")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "refused the admin token") {
		t.Errorf("forged token: exit %d, stdout %q, stderr %q; want 1 and a refusal", code, stdout, stderr)
	}

	// The RPC port is not the admin port: the answer says so.
	stdout, stderr, code = runCLI(t, "document", "get", key, "--addr", s.URL(), "--token", token)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "not a Yorkie admin endpoint") {
		t.Errorf("RPC port as --addr: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// --project names the project by name or ID: the default one holds the
	// document, an unknown one is said to be unknown.
	for _, p := range []string{"default", "000000000000000000000000"} {
		stdout, stderr, code = runCLI(t, "document", "get", key, "--project", p, "--addr", addr, "--token", token)
		var view docview.DocumentView
		if code != 0 || json.Unmarshal([]byte(stdout), &view) != nil || view.ID != a.DocID {
			t.Errorf("--project %s: exit %d, stdout %q, stderr %q; want the document %s", p, code, stdout, stderr, a.DocID)
		}
	}
	stdout, stderr, code = runCLI(t, "document", "get", key, "--project", "no-such-project", "--addr", addr, "--token", token)
	if code != 1 || stdout != "" || !strings.Contains(stderr, `no project "no-such-project"`) {
		t.Errorf("unknown project: exit %d, stdout %q, stderr %q; want 1 and a message naming the project", code, stdout, stderr)
	}

	s.Kill()
	stdout, stderr, code = runCLI(t, "document", "get", key, "--addr", addr, "--token", token)
	if code != 1 || stdout != "" || !strings.Contains(stderr, "cannot reach the server at "+addr) {
		t.Errorf("stopped server: exit %d, stdout %q, stderr %q; want 1 and cannot reach", code, stdout, stderr)
	}
}
