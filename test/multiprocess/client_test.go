package multiprocess_test

import (
	"context"
	"encoding/hex"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// attachPack attaches docKey through r (see wire.Replica.AttachWith) and
// returns the change pack of the answer: the document's log as a client
// attaching now is sent it.
func attachPack(ctx context.Context, r *wire.Replica, docKey string, presence map[string]string) (*api.ChangePack, error) {
	resp, err := r.AttachWith(ctx, docKey, presence)
	if err != nil {
		return nil, err
	}
	return resp.GetChangePack(), nil
}

// logEntry is one change of a document's log as a client receives it.
type logEntry struct {
	serverSeq int64
	actor     string
	clientSeq uint32
}

// entries lists the pulled changes of a pack in the order received.
func entries(p *api.ChangePack) []logEntry {
	out := make([]logEntry, 0, len(p.GetChanges()))
	for _, ch := range p.GetChanges() {
		out = append(out, logEntry{
			serverSeq: ch.GetId().GetServerSeq(),
			actor:     hex.EncodeToString(ch.GetId().GetActorId()),
			clientSeq: ch.GetId().GetClientSeq(),
		})
	}
	return out
}

// setKeys returns the root keys the pack's changes set, in order.
func setKeys(p *api.ChangePack) []string {
	var keys []string
	for _, ch := range p.GetChanges() {
		for _, op := range ch.GetOperations() {
			if s := op.GetSet(); s != nil {
				keys = append(keys, s.GetKey())
			}
		}
	}
	return keys
}
