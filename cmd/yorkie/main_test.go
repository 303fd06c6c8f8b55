package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunCommands(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, 2, "", "usage: yorkie"},
		{"unknown command", []string{"serve"}, 2, "", `unknown command "serve"`},
		{"version", []string{"version", "--client"}, 0, "yorkie dev\n", ""},
		{"project without command", []string{"project"}, 2, "", "usage: yorkie project"},
		{"login without user", []string{"login"}, 2, "", "--username and --password are required"},
		{"bad output", []string{"project", "ls", "--output", "yaml"}, 2, "", "--output"},
		{"negative token duration", []string{"server", "--admin-token-duration", "-1h"}, 1, "", "token duration"},
		{"help", []string{"help"}, 0, "usage: yorkie", ""},
		{"unknown flag", []string{"server", "--no-such-flag"}, 2, "", "flag provided but not defined"},
		{"bad log level", []string{"server", "--log-level", "loud"}, 2, "", "--log-level"},
		{"stray argument", []string{"server", "extra"}, 2, "", "unexpected arguments"},
		{"bad timeout", []string{"server", "--rpc-read-body-timeout", "soon"}, 2, "", "invalid value"},
		{"bad switch", []string{"server", "--rpc-fast-json=maybe"}, 2, "", "invalid boolean value"},
		{"document without command", []string{"document"}, 2, "", "usage: yorkie document get"},
		{"document unknown command", []string{"document", "list"}, 2, "", `unknown command "list"`},
		{"document get without key", []string{"document", "get"}, 2, "", "a document key is required"},
		{"document get empty key", []string{"document", "get", ""}, 2, "", "a document key is required"},
		{"document get two keys", []string{"document", "get", "a", "b"}, 2, "", "unexpected arguments"},
		{"document get bad addr", []string{"document", "get", "doc", "--addr", "127.0.0.1:8081"}, 2, "", "want a URL"},
	}
	// The admin commands must not read the real user's config.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d (stderr: %s)", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) || (tc.wantStdout == "" && stdout.Len() > 0) {
				t.Errorf("stdout %q, want it to contain %q", stdout.String(), tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}
