package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// drainCallTimeout bounds a drain call: longer than any node's
// --shutdown-drain-timeout is likely to be.
const drainCallTimeout = 5 * time.Minute

// drainResult is what drain prints.
type drainResult struct {
	Node          string `json:"node" yaml:"node"`
	DocumentsLeft int32  `json:"documentsLeft" yaml:"documentsLeft"`
}

// drainCommand asks a node to hand its documents on (AdminService
// DrainNode), as SIGTERM does before a node exits, without stopping it.
func (c *cli) drainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "drain [node-host:port]",
		Short: "Hand a node's documents on to other nodes before stopping it (default: the node --rpc-addr reaches)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			msg := &api.DrainNodeRequest{}
			if len(args) == 1 {
				msg.Node = args[0]
			}
			req, err := request(s, msg)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), drainCallTimeout)
			defer cancel()
			res, err := s.client.DrainNode(ctx, req)
			if err != nil {
				return fmt.Errorf("%s: %w", s.addr, err)
			}
			out := drainResult{Node: res.Msg.GetNode(), DocumentsLeft: res.Msg.GetDocumentsLeft()}
			if c.output != tableOutput {
				return printAs(c.stdout, c.output, out)
			}
			fmt.Fprintf(c.stdout, "drained %s: %d documents left\n", out.Node, out.DocumentsLeft)
			return nil
		},
	}
}
