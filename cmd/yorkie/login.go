package main

import (
	"errors"
	"fmt"
	"io"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// runLogin logs in and stores the token for the server in the config file.
func runLogin(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("yorkie login", stderr)
	username := fs.String("username", "", "user name (required)")
	fs.StringVar(username, "u", "", "shorthand for --username")
	password := fs.String("password", "", "password (required)")
	fs.StringVar(password, "p", "", "shorthand for --password")
	addr := fs.String("rpc-addr", defaultRPCAddr, "address of the server")
	insecure := fs.Bool("insecure", true, "kept for upstream's command line; this server speaks cleartext")
	return exitCode(stderr, "yorkie login", func() error {
		rest, err := parseInterspersed(fs, args)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return usageError{error: fmt.Errorf("unexpected arguments %q", rest)}
		}
		if *username == "" || *password == "" {
			return usageError{error: errors.New("--username and --password are required")}
		}
		s, conf, err := openSession(*addr)
		if err != nil {
			return err
		}
		ctx, cancel := callContext()
		defer cancel()
		res, err := s.client.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: *username, Password: *password}))
		if err != nil {
			return fmt.Errorf("log in to %s: %w", s.addr, err)
		}
		conf.Auths[s.addr] = cliAuth{Token: res.Msg.Token, Insecure: *insecure}
		conf.RPCAddr = s.addr
		if err := saveConfig(conf); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "logged in to %s as %s\n", s.addr, *username)
		return nil
	}())
}

// runLogout forgets the token of one server, or of every server with --all.
func runLogout(args []string, stdout, stderr io.Writer) int {
	fs := flagSet("yorkie logout", stderr)
	addr := fs.String("rpc-addr", "", "address of the server (default: the one logged in to last)")
	all := fs.Bool("all", false, "forget the tokens of every server")
	return exitCode(stderr, "yorkie logout", func() error {
		rest, err := parseInterspersed(fs, args)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return usageError{error: fmt.Errorf("unexpected arguments %q", rest)}
		}
		s, conf, err := openSession(*addr)
		if err != nil {
			return err
		}
		if *all {
			conf.Auths = map[string]cliAuth{}
		} else {
			delete(conf.Auths, s.addr)
		}
		if conf.RPCAddr == s.addr || *all {
			conf.RPCAddr = ""
		}
		if err := saveConfig(conf); err != nil {
			return err
		}
		if *all {
			fmt.Fprintln(stdout, "logged out of every server")
		} else {
			fmt.Fprintf(stdout, "logged out of %s\n", s.addr)
		}
		return nil
	}())
}
