package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// runFields sends oversized values in the fields a client controls that
// the server keeps: channel keys, client metadata and presence. Each call
// is a distinct client or key, so what is accepted is also kept.
func runFields(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error) {
	c, tr := t.yorkie("")
	defer tr.CloseIdleConnections()
	big := strings.Repeat("x", cfg.fieldBytes)
	base, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	keys, metadata, presence := map[string]int{}, map[string]int{}, map[string]int{}
	for i := range cfg.fieldCalls {
		// A client with 1 MiB of metadata.
		_, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{
			ClientKey: fmt.Sprintf("meta%d", i), Metadata: map[string]string{"m": big},
		}))
		metadata[code(err)]++

		// A channel with a 1 MiB key.
		resp, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: fmt.Sprintf("chan%d", i)}))
		if err != nil {
			return nil, fmt.Errorf("activate: %w", err)
		}
		_, err = c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{
			ClientId: resp.Msg.GetClientId(), ChannelKey: strconv.Itoa(i) + big,
		}))
		keys[code(err)]++

		// An attachment with a 1 MiB presence.
		s, err := activate(ctx, c, fmt.Sprintf("presence%d", i))
		if err != nil {
			return nil, err
		}
		s.Attached("fields-doc")
		s.NewPresence(map[string]string{"p": strconv.Quote(big)})
		_, err = c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{ClientId: s.ID, ChangePack: s.Pack()}))
		presence[code(err)]++
	}
	after, err := t.usage(ctx, true)
	if err != nil {
		return nil, err
	}
	logger.Info("fields: done", "keys", keys, "metadata", metadata, "presence", presence)
	size := fmt.Sprintf("%d KiB", cfg.fieldBytes>>10)
	return []figure{
		{"AttachChannel with a " + size + " channel key", fmt.Sprintf("%d: %s", cfg.fieldCalls, outcomeString(keys))},
		{"ActivateClient with " + size + " of metadata", fmt.Sprintf("%d: %s", cfg.fieldCalls, outcomeString(metadata))},
		{"AttachDocument with a " + size + " presence", fmt.Sprintf("%d: %s", cfg.fieldCalls, outcomeString(presence))},
		{"server heap in use: before / after (after a GC)", fmt.Sprintf("%s / %s", mib(base.heap), mib(after.heap))},
	}, nil
}
