package rpc

import (
	"fmt"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// MaxPresenceBytes bounds the keys and values of one presence a change
// puts. A presence is kept with its client's attachment and sent to every
// client of the document, so its size is bounded on its own rather than
// only by the request's. The SDK's presences (names, colours, cursors,
// selections) are far smaller.
const MaxPresenceBytes = 64 << 10

// checkPresences refuses a pack with a presence over MaxPresenceBytes. The
// request can never succeed, so the code is one clients do not retry.
func checkPresences(pack *api.ChangePack) error {
	for _, ch := range pack.GetChanges() {
		n := 0
		for k, v := range ch.GetPresenceChange().GetPresence().GetData() {
			n += len(k) + len(v)
		}
		if n > MaxPresenceBytes {
			return errinfo.New(connect.CodeInvalidArgument, errinfo.CodePresenceTooLarge,
				fmt.Errorf("a presence is larger than %d bytes (keys and values together)", MaxPresenceBytes))
		}
	}
	return nil
}
