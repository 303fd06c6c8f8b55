package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// contextInfo is one row of "context ls", in upstream's fields.
type contextInfo struct {
	Current  string `json:"current" yaml:"current"`
	RPCAddr  string `json:"rpc_addr" yaml:"rpc_addr"`
	Insecure string `json:"insecure" yaml:"insecure"`
	Token    string `json:"token" yaml:"token"`
}

// contextCommand manages the servers logged in to (the contexts of the
// config file) and which one is current.
func (c *cli) contextCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "context", Short: "Manage contexts (the servers logged in to)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List the contexts",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := loadConfig()
			if err != nil {
				return err
			}
			current := c.addr(cmd)
			if current == "" {
				current = conf.RPCAddr
			}
			if current == "" {
				current = defaultRPCAddr
			}
			contexts := make([]contextInfo, 0, len(conf.Auths))
			for _, addr := range sortedKeys(conf.Auths) {
				auth := conf.Auths[addr]
				info := contextInfo{RPCAddr: addr, Insecure: fmt.Sprint(auth.Insecure), Token: auth.Token}
				if addr == current {
					info.Current = "*"
				}
				if len(auth.Token) > 10 {
					info.Token = auth.Token[:10] + "..." + auth.Token[len(auth.Token)-10:]
				}
				contexts = append(contexts, info)
			}
			if c.output != tableOutput {
				return printAs(c.stdout, c.output, contexts)
			}
			rows := make([][]any, 0, len(contexts))
			for _, ctx := range contexts {
				rows = append(rows, []any{ctx.Current, ctx.RPCAddr, ctx.Insecure, ctx.Token})
			}
			return printTable(c.stdout, []string{"CURRENT", "RPC ADDR", "INSECURE", "TOKEN"}, rows)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "set RPC_ADDR",
		Short: "Make the context of a server the current one",
		Args:  exactArgs("the server's address"),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := loadConfig()
			if err != nil {
				return err
			}
			if _, ok := conf.Auths[args[0]]; !ok {
				return fmt.Errorf("no context for %s: run yorkie login --rpc-addr %s", args[0], args[0])
			}
			conf.RPCAddr = args[0]
			return saveConfig(conf)
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "remove RPC_ADDR",
		Short: "Remove the context of a server",
		Args:  exactArgs("the server's address"),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := loadConfig()
			if err != nil {
				return err
			}
			if _, ok := conf.Auths[args[0]]; !ok {
				return fmt.Errorf("no context for %s", args[0])
			}
			conf.forget(args[0])
			return saveConfig(conf)
		},
	})
	return cmd
}
