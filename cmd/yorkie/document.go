package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yorkie-affinity/yorkie/server/admin/docview"
)

// defaultAdminAddr is the profiling port of a server started with the
// default flags, where the admin views are served.
const defaultAdminAddr = "http://127.0.0.1:8081"

// maxViewBytes bounds the answer the CLI reads: a document is at most 10 MiB
// by default, and its JSON a small multiple of that.
const maxViewBytes = 256 << 20

const documentUsage = `usage: yorkie document get KEY [--project NAME|ID] [--addr URL] [--token TOKEN] [--timeout DURATION]

Prints the document with the key as its owner holds it now, as JSON: its
ID, project, server_seq, size, garbage length, newest snapshot and content
(root). --project names the document's project by ID, or by name among the
projects of the token's user; without it, the default project. The server
answers on its profiling port (--profiling-port, default 8081), with the
admin token of --token or of yorkie login.
`

// runDocument runs "yorkie document ...".
func runDocument(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, documentUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] != "get" {
		fmt.Fprintf(stderr, "yorkie document: unknown command %q\n\n%s", args[0], documentUsage)
		return 2
	}
	fs := flag.NewFlagSet("yorkie document get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, documentUsage) }
	addr := fs.String("addr", defaultAdminAddr, "base URL of the server's profiling port")
	timeout := fs.Duration("timeout", 30*time.Second, "time the server has to answer")
	projectName := fs.String("project", "", "the document's project, by name or ID (default: the default project)")
	token := fs.String("token", "", "an admin token (default: the one yorkie login stored for the current server)")
	// Flags may come before or after the key.
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "" {
		fmt.Fprintf(stderr, "yorkie document get: a document key is required\n\n%s", documentUsage)
		return 2
	}
	key := rest[0]
	if err := fs.Parse(rest[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "yorkie document get: unexpected arguments %q\n", fs.Args())
		return 2
	}
	base, err := url.Parse(strings.TrimRight(*addr, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		fmt.Fprintf(stderr, "yorkie document get: --addr %q: want a URL such as %s\n", *addr, defaultAdminAddr)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *token == "" {
		if conf, err := loadConfig(); err == nil {
			*token = conf.Auths[conf.RPCAddr].Token
		}
	}
	if *token == "" {
		fmt.Fprintln(stderr, "yorkie document get: not logged in: run yorkie login, or pass --token")
		return 1
	}
	out, err := getDocument(ctx, base.String(), *projectName, key, *token)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie document get: %v\n", err)
		return 1
	}
	_, _ = stdout.Write(out)
	return 0
}

// getDocument fetches the admin view of key from the server at base and
// returns it indented, or an error saying what went wrong in an operator's
// terms.
func getDocument(ctx context.Context, base, projectName, key, token string) ([]byte, error) {
	target := base + docview.DocumentsPath + url.PathEscape(key)
	if projectName != "" {
		target += "?" + url.Values{docview.ProjectParam: {projectName}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", target, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the server at %s (is it running, and is --addr its profiling port?): %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxViewBytes))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s: %w", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		var refusal struct{ Error, Code string }
		if json.Unmarshal(body, &refusal) != nil || refusal.Code == "" {
			return nil, fmt.Errorf("%s answered %s (not a Yorkie admin endpoint?)", target, resp.Status)
		}
		if refusal.Code == "document_not_found" {
			return nil, fmt.Errorf("no document with key %q on the server at %s", key, base)
		}
		if refusal.Code == "unauthenticated" {
			return nil, fmt.Errorf("the server at %s refused the admin token: run yorkie login again, or pass --token", base)
		}
		if refusal.Code == "project_not_found" {
			return nil, fmt.Errorf("no project %q on the server at %s", projectName, base)
		}
		return nil, fmt.Errorf("the server refused (%s, %s): %s", resp.Status, refusal.Code, refusal.Error)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		return nil, fmt.Errorf("%s answered something that is not JSON: %w", target, err)
	}
	return pretty.Bytes(), nil
}
