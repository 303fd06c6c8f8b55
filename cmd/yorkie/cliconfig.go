package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// defaultRPCAddr is the server the admin commands talk to when neither the
// flag nor the config file names one, as upstream's CLI does.
const defaultRPCAddr = "localhost:8080"

// adminCallTimeout bounds one admin call of the CLI.
const adminCallTimeout = 30 * time.Second

// cliAuth is the token of one server, and whether it is reached over
// cleartext (upstream's --insecure) rather than TLS.
type cliAuth struct {
	Token    string `json:"token"`
	Insecure bool   `json:"insecure"`
}

// cliConfig is the CLI's file, upstream's ~/.yorkie/config.json: the
// tokens by server address (the contexts) and the current one.
type cliConfig struct {
	Auths   map[string]cliAuth `json:"auths"`
	RPCAddr string             `json:"rpcAddr"`
}

// configPath is upstream's $HOME/.yorkie/config.json.
func configPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory: %w", err)
	}
	return filepath.Join(home, ".yorkie", "config.json"), nil
}

// legacyConfigPath is where earlier releases of this CLI kept the file;
// it is read when upstream's is missing, so a login carries over.
func legacyConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "yorkie", "config.json")
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
		if legacy := legacyConfigPath(); legacy != "" {
			path = legacy
			data, err = os.ReadFile(legacy)
		}
	}
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
	data, err := json.Marshal(conf)
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

// deleteConfig removes the config file, as upstream's logout does when no
// other server is left.
func deleteConfig() error {
	path, err := configPath()
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// forget removes the context of addr; the current one moves to another
// when it was addr.
func (c *cliConfig) forget(addr string) {
	delete(c.Auths, addr)
	if c.RPCAddr == addr {
		c.RPCAddr = ""
		for _, other := range sortedKeys(c.Auths) {
			c.RPCAddr = other
			break
		}
	}
}

// serverURL turns an address into the URL calls go to: "host:port" is
// reached over TLS unless insecure, as upstream's CLI does.
func serverURL(addr string, insecure bool) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	if insecure {
		return "http://" + addr
	}
	return "https://" + addr
}

// adminSession is an AdminService client for one server, with the token
// the user logged in with, if any.
type adminSession struct {
	addr   string
	token  string
	client v1connect.AdminServiceClient
}

func dialAdmin(addr string, auth cliAuth) *adminSession {
	return &adminSession{
		addr:   addr,
		token:  auth.Token,
		client: v1connect.NewAdminServiceClient(http.DefaultClient, serverURL(addr, auth.Insecure)),
	}
}

// openSession picks the server (the flag, else the current context, else
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
	// Without a context for addr there is no token: request refuses to
	// send anything.
	return dialAdmin(addr, conf.Auths[addr]), conf, nil
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

// projectCall sends msg to one AdminService method about a project's
// documents: the project is looked up with the session's token, and the
// call carries its secret key (upstream's "Authorization: API-Key"). call is
// the method, e.g. v1connect.AdminServiceClient.ListDocuments; errors name
// what the call was for.
func projectCall[Req, Res any](
	ctx context.Context, s *adminSession, project string, msg *Req, what string,
	call func(v1connect.AdminServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error),
) (*Res, error) {
	get, err := request(s, &api.GetProjectRequest{Name: project})
	if err != nil {
		return nil, err
	}
	found, err := s.client.GetProject(ctx, get)
	if err != nil {
		return nil, fmt.Errorf("find project %q: %w", project, s.explain("GetProject", err))
	}
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "API-Key "+found.Msg.Project.SecretKey)
	res, err := call(s.client, ctx, req)
	if err != nil {
		method := strings.TrimPrefix(fmt.Sprintf("%T", msg), "*v1.")
		return nil, fmt.Errorf("%s: %w", what, s.explain(strings.TrimSuffix(method, "Request"), err))
	}
	return res.Msg, nil
}

// explain turns an AdminService method the server does not serve into an
// error that says so.
func (s *adminSession) explain(method string, err error) error {
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		return fmt.Errorf("the server at %s does not serve AdminService.%s (yet): %w", s.addr, method, err)
	}
	return err
}

// callContext bounds one admin call.
func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), adminCallTimeout)
}

// usageError is a command line the command cannot run (exit status 2).
type usageError struct {
	error
}

// exitError carries the status of a command that reported its own error.
type exitError struct {
	code int
}

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
