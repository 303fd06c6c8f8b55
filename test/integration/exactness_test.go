package integration_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestRemovalDeliversPendingChanges checks that a client syncing a document
// another client removed gets the changes it had not pulled, the remover's
// last ones included, together with is_removed.
func TestRemovalDeliversPendingChanges(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		a.MustPushPull()
		b.MustPushPull()

		a.Edit(2)
		a.MustPushPull()
		a.Edit(1) // sent with the removal
		pack := a.Pack()
		pack.IsRemoved = true
		_, err := c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{
			ClientId: a.ID, DocumentId: a.DocID, ChangePack: pack,
		}))
		wire.Must(t, err, "remove")

		p, err := b.PushPull(ctx)
		wire.Must(t, err, "pushpull after the removal")
		if !p.GetIsRemoved() {
			t.Fatal("answer after the removal lacks is_removed")
		}
		for seq := a.LastSeq - 2; seq <= a.LastSeq; seq++ {
			if b.Seen[fmt.Sprintf("%s/%d", a.ID, seq)] != 1 {
				t.Fatalf("b did not get a's change %d with the removal; pulled %v", seq, b.Seen)
			}
		}
	})
}

// TestHugeVersionVectorRefused checks that a vector naming actors the
// document does not know (here 100,000 of them) is refused with
// invalid_argument, and that the answers to the other clients stay small.
func TestHugeVersionVectorRefused(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		ka := sdksim.VectorKey(a.Actor)
		kb := sdksim.VectorKey(b.Actor)

		huge := map[string]int64{ka: a.Lamport}
		for i := range 100_000 {
			huge[base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "actor%07d", i))] = 1
		}
		req := a.PushPullRequest()
		req.Msg.ChangePack.VersionVector = &api.VersionVector{Vector: huge}
		_, err := c.PushPullChanges(ctx, req)
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidChangePack)

		req = b.PushPullRequest()
		req.Msg.ChangePack.VersionVector = &api.VersionVector{Vector: map[string]int64{ka: 1, kb: 1}}
		resp, err := c.PushPullChanges(ctx, req)
		wire.Must(t, err, "pushpull of another client")
		vv := resp.Msg.GetChangePack().GetVersionVector().GetVector()
		for k := range vv {
			if k != ka && k != kb {
				t.Fatalf("the other client's minimum synced vector names actor %q", k)
			}
		}
		t.Logf("answer to the other client: %d bytes", proto.Size(resp.Msg))
	})
}
