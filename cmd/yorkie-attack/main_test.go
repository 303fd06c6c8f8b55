package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestAttacksSmall runs the attacks small against the binary YORKIE_BIN
// names and checks what the server answered, counts only: the figures
// themselves are for the README, not for assertions.
func TestAttacksSmall(t *testing.T) {
	bin := os.Getenv("YORKIE_BIN")
	if bin == "" {
		testenv.Unavailable(t, "YORKIE_BIN names no yorkie binary (go build -o bin/yorkie ./cmd/yorkie)")
	}
	cfg := config{
		authRequests: 40, authSpread: 200 * time.Millisecond, authGiveUp: 500 * time.Millisecond,
		topics: 2, topicBytes: 1 << 20, bombs: 2, bombBytes: 64 << 20,
		portTimeout: 200 * time.Millisecond, guesses: 8, viewOps: 2000, views: 2,
		longRequests: 40, longSpread: 200 * time.Millisecond, longTimeout: time.Hour,
		signUpFor: 500 * time.Millisecond, fieldCalls: 2, fieldBytes: 1 << 20,
	}
	want := map[string]map[string]string{
		"auth":     {"attacking calls (each gives up after 500ms)": "40 over 200ms: "},
		"authlong": {"attacking calls (webhook request timeout 1h0m0s, each gives up after 500ms)": "40 over 200ms: "},
		"authport": {"closed port: answer / time (200ms timeout, 2 retries)": `internal "ErrWebhookTimeout"`, "open port, never answers: answer / time (200ms timeout, 2 retries)": `internal "ErrWebhookTimeout"`},
		"topic":    {"broadcasts with a 1 MiB topic": "2: 2 invalid_argument"},
		"lamport":  {"push of a change with lamport 2^63-1": "invalid_argument", "lamport a client attaching next pulls": "1 (an SDK client's next change fits int64)"},
		"bomb":     {"gzip bombs sent at once": "64 MiB inflated: HTTP 2 400"},
		"docview": {
			"document built by one anonymous client":                                   "2000 operations in ",
			"a bystander's PushPull on another document, p50 / p99: during the 2 GETs": " pushes",
		},
		"signup": {"SignUp calls from one address, 4 at a time, for 500ms": " ok"},
		"webhookaddr": {
			"ActivateClient with the auth webhook on 127.0.0.1: answers / calls reaching the webhook": "/ 0 of 5",
			"event webhook on 127.0.0.1: deliveries for one changed document, 3 s after":              "0",
		},
		"fields": {
			"AttachChannel with a 1024 KiB channel key": "2: 2 invalid_argument",
			"ActivateClient with 1024 KiB of metadata":  "2: 2 invalid_argument",
			"AttachDocument with a 1024 KiB presence":   "2: 2 invalid_argument",
		},
		"admin": {
			"GET /admin/documents/{key} on the profiling port, no credentials":              "401",
			"AdminService preflight from https://evil.example: Access-Control-Allow-Origin": "(none)",
			"warning at start while admin/admin works":                                      "yes",
			"wrong-password LogIn calls, one after the other":                               "resource_exhausted",
		},
	}
	logger := slog.New(slog.DiscardHandler)
	for _, a := range attacks() {
		checks, ok := want[a.name]
		if !ok {
			continue // event, eventdrop: tens of seconds, or a thousand documents
		}
		t.Run(a.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			target, err := startServer(ctx, bin, io.Discard, a.defaults)
			require.NoError(t, err)
			defer target.stop()
			figs, err := a.run(ctx, target, cfg, logger)
			require.NoError(t, err)
			got := map[string]string{}
			for _, f := range figs {
				got[f.name] = f.value
			}
			for name, value := range checks {
				assert.Contains(t, got[name], value, "%s: %s", a.name, name)
			}
		})
	}
}

func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give at least one -bin name=path"},
		{[]string{"-bin", "nopath"}, "want name=path"},
		{[]string{"-bin", "a= "}, "want name=path"},
		{[]string{"-bin", "a=b", "-attacks", "nosuch"}, `unknown attack "nosuch"`},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(tc.args, &stdout, &stderr), "%v", tc.args)
		assert.True(t, strings.Contains(stderr.String(), tc.want), "%v: %s", tc.args, stderr.String())
	}
}
