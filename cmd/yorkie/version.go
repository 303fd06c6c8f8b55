package main

import (
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// buildDate is set at build time with -ldflags "-X main.buildDate=...".
var buildDate = ""

// runVersion prints this command's version and, unless --client, the
// version of the server logged in to (or named by --rpc-addr). A server
// that cannot be asked is reported on stderr; the command still succeeds,
// as upstream's does.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("yorkie version", stderr)
	clientOnly := fs.Bool("client", false, "print this command's version only (no server needed)")
	addr := fs.String("rpc-addr", "", "address of the server (default: the one logged in to last)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return exitCode(stderr, "yorkie version", err)
	}
	if len(rest) > 0 {
		return exitCode(stderr, "yorkie version", usageError{error: fmt.Errorf("unexpected arguments %q", rest)})
	}
	fmt.Fprintf(stdout, "yorkie %s\n", version)
	if *clientOnly {
		return 0
	}
	v, err := serverVersion(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie version: cannot ask the server: %v\n", err)
		return 0
	}
	fmt.Fprintf(stdout, "server %s (%s, built %s)\n", v.YorkieVersion, v.GoVersion, dash(v.BuildDate))
	return 0
}

func serverVersion(addr string) (*api.GetServerVersionResponse, error) {
	s, _, err := openSession(addr)
	if err != nil {
		return nil, err
	}
	req, err := request(s, &api.GetServerVersionRequest{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := callContext()
	defer cancel()
	res, err := s.client.GetServerVersion(ctx, req)
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		return nil, errors.New("the server at " + s.addr + " does not report its version")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.addr, err)
	}
	return res.Msg, nil
}
