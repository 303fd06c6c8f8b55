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
		{"no command", nil, 0, "Available Commands", ""},
		{"unknown command", []string{"serve"}, 2, "", `unknown command "serve"`},
		{"version", []string{"version", "--client"}, 0, "Yorkie Client: dev\n", ""},
		{"version json", []string{"version", "--client", "-o", "json"}, 0, `"yorkieVersion": "dev"`, ""},
		{"version yaml", []string{"version", "--client", "-o", "yaml"}, 0, "clientVersion:\n    yorkieVersion: dev", ""},
		{"project without command", []string{"project"}, 0, "Available Commands", ""},
		{"login without user", []string{"login"}, 2, "", `required flag(s) "username" not set`},
		{"bad output", []string{"project", "ls", "--output", "xml"}, 2, "", "--output"},
		{"project create without name", []string{"project", "create"}, 2, "", "want the project name"},
		{"document ls without project", []string{"document", "ls"}, 2, "", "want the project name"},
		{"history with one argument", []string{"history", "p"}, 2, "", "want the project name and the document key"},
		{"document update without root", []string{"document", "update", "p", "k"}, 2, "", `required flag(s) "root" not set`},
		{"context set unknown", []string{"context", "set", "nowhere:1"}, 1, "", "no context for nowhere:1"},
		{"passwd not logged in", []string{"passwd", "-u", "x", "--rpc-addr", "127.0.0.1:1"}, 1, "", "not logged in to 127.0.0.1:1"},
		{"completion", []string{"completion", "zsh"}, 0, "compdef", ""},
		{"negative token duration", []string{"server", "--admin-token-duration", "-1h"}, 1, "", "token duration"},
		{"help", []string{"help"}, 0, "Available Commands", ""},
		{"unknown flag", []string{"server", "--no-such-flag"}, 2, "", "flag provided but not defined"},
		{"bad log level", []string{"server", "--log-level", "loud"}, 2, "", "--log-level"},
		{"stray argument", []string{"server", "extra"}, 2, "", "unexpected arguments"},
		{"bad timeout", []string{"server", "--rpc-read-body-timeout", "soon"}, 2, "", "invalid value"},
		{"bad switch", []string{"server", "--rpc-fast-json=maybe"}, 2, "", "invalid boolean value"},
		{"document unknown command", []string{"document", "get", "-h"}, 0, "", "usage: yorkie document get"},
		{"document get without key", []string{"document", "get"}, 2, "", "a document key is required"},
		{"document get empty key", []string{"document", "get", ""}, 2, "", "a document key is required"},
		{"document get two keys", []string{"document", "get", "a", "b"}, 2, "", "unexpected arguments"},
		{"document get bad addr", []string{"document", "get", "doc", "--addr", "127.0.0.1:8081"}, 2, "", "want a URL"},
	}
	// The admin commands must not read the real user's config.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
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
