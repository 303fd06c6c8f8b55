package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// defaultRPCAddr is the server the admin commands talk to when neither the
// flag nor the config file names one, as upstream's CLI does.
const defaultRPCAddr = "localhost:8080"

// adminCallTimeout bounds one admin call of the CLI.
const adminCallTimeout = 30 * time.Second

// cliAuth is the token of one server. Insecure is kept for upstream's file
// format; this server speaks cleartext only.
type cliAuth struct {
	Token    string `json:"token"`
	Insecure bool   `json:"insecure"`
}

// cliConfig is the CLI's file, in upstream's format: the tokens by server
// address and the address logged in to last.
type cliConfig struct {
	Auths   map[string]cliAuth `json:"auths"`
	RPCAddr string             `json:"rpcAddr"`
}

// configPath is $XDG_CONFIG_HOME/yorkie/config.json (or the platform's user
// config directory).
func configPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory: %w", err)
	}
	return filepath.Join(dir, "yorkie", "config.json"), nil
}

// loadConfig reads the config file; a missing one is an empty config.
func loadConfig() (*cliConfig, error) {
	path, err := configPath()
	if err != nil {
		return nil, err
	}
	conf := &cliConfig{Auths: map[string]cliAuth{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return conf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, conf); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if conf.Auths == nil {
		conf.Auths = map[string]cliAuth{}
	}
	return conf, nil
}

// saveConfig writes the config file readable by its owner only: it holds
// tokens.
func saveConfig(conf *cliConfig) error {
	path, err := configPath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the config directory: %w", err)
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// serverURL turns an address into the URL calls go to: "host:port" means
// cleartext HTTP, the only transport this server serves.
func serverURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}

// adminSession is an AdminService client for one server, with the token
// the user logged in with, if any.
type adminSession struct {
	addr   string
	token  string
	client v1connect.AdminServiceClient
}

// openSession picks the server (the flag, else the last logged-in one, else
// the default) and its stored token.
func openSession(addrFlag string) (*adminSession, *cliConfig, error) {
	conf, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	addr := addrFlag
	if addr == "" {
		addr = conf.RPCAddr
	}
	if addr == "" {
		addr = defaultRPCAddr
	}
	s := &adminSession{
		addr:   addr,
		token:  conf.Auths[addr].Token,
		client: v1connect.NewAdminServiceClient(http.DefaultClient, serverURL(addr)),
	}
	return s, conf, nil
}

// request wraps msg with the session's token as upstream's CLI sends it.
func request[T any](s *adminSession, msg *T) (*connect.Request[T], error) {
	if s.token == "" {
		return nil, fmt.Errorf("not logged in to %s: run yorkie login --rpc-addr %s", s.addr, s.addr)
	}
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "Bearer "+s.token)
	return req, nil
}

// callContext bounds one admin call.
func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), adminCallTimeout)
}

// parseInterspersed parses flags that may come before, between or after
// the positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err, true}
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagSet returns a flag set whose errors and help go to stderr.
func flagSet(name string, stderr interface{ Write([]byte) (int, error) }) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// exitCode reports a command's error and returns its exit status: 2 for
// usage errors, 1 for the rest.
func exitCode(stderr interface{ Write([]byte) (int, error) }, cmd string, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var usage usageError
	if errors.As(err, &usage) {
		if !usage.printed { // the flag package printed its own
			fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		}
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	return 1
}

// usageError is a command line the command cannot run.
type usageError struct {
	error
	printed bool
}
