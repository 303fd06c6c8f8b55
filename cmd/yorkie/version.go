package main

import (
	"errors"
	"fmt"
	"runtime"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// buildDate is set at build time with -ldflags "-X main.buildDate=...".
var buildDate = ""

// versionDetail and versionInfo are upstream's "version" output.
type versionDetail struct {
	YorkieVersion string `json:"yorkieVersion" yaml:"yorkieVersion"`
	GoVersion     string `json:"goVersion" yaml:"goVersion"`
	BuildDate     string `json:"buildDate" yaml:"buildDate"`
}

type versionInfo struct {
	ClientVersion *versionDetail `json:"clientVersion,omitempty" yaml:"clientVersion,omitempty"`
	ServerVersion *versionDetail `json:"serverVersion,omitempty" yaml:"serverVersion,omitempty"`
}

// versionCommand prints this command's version and, unless --client, the
// version of the current server. A server that cannot be asked is
// reported after the output; the command still succeeds, as upstream's
// does.
func (c *cli) versionCommand() *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this command and of the server",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			info := versionInfo{ClientVersion: &versionDetail{YorkieVersion: version, GoVersion: runtime.Version(), BuildDate: buildDate}}
			var serverErr error
			if !clientOnly {
				info.ServerVersion, serverErr = serverVersion(c.addr(cmd))
			}
			if c.output != tableOutput {
				if err := printAs(c.stdout, c.output, info); err != nil {
					return err
				}
			} else {
				for _, d := range []struct {
					name string
					v    *versionDetail
				}{{"Yorkie Client", info.ClientVersion}, {"Yorkie Server", info.ServerVersion}} {
					if d.v != nil {
						fmt.Fprintf(c.stdout, "%s: %s\nGo: %s\nBuild Date: %s\n", d.name, d.v.YorkieVersion, d.v.GoVersion, d.v.BuildDate)
					}
				}
			}
			if serverErr != nil {
				fmt.Fprintf(c.stderr, "Error fetching server version: %v\n", serverErr)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print this command's version only (no server needed)")
	return cmd
}

func serverVersion(addr string) (*versionDetail, error) {
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
		return nil, errors.New("the server does not support this operation; check its version")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.addr, err)
	}
	return &versionDetail{YorkieVersion: res.Msg.YorkieVersion, GoVersion: res.Msg.GoVersion, BuildDate: res.Msg.BuildDate}, nil
}
