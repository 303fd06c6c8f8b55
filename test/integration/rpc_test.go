package integration_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// unknownClientID is well formed but belongs to no client.
const unknownClientID = "0123456789abcdef01234567"

func TestActivateClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		key := wire.UniqueKey(t, "client")
		first, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{
			ClientKey: key, Metadata: map[string]string{"userID": "u1"},
		}))
		wire.Must(t, err, "activate")
		id := first.Msg.GetClientId()
		if len(id) != 24 || strings.ToLower(id) != id {
			t.Fatalf("client_id %q: want 24 lowercase hex characters", id)
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("client_id %q is not hex: %v", id, err)
		}
		// Every activation makes a new client, with a greater ID: knowing a
		// key does not give anyone the client made with it.
		again, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
		wire.Must(t, err, "activate again")
		if again.Msg.GetClientId() <= id {
			t.Fatalf("same key gave client %s then %s, want a new, greater ID", id, again.Msg.GetClientId())
		}
		other, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key + "-other"}))
		wire.Must(t, err, "activate another key")
		if other.Msg.GetClientId() == id {
			t.Fatalf("two keys share client %s", id)
		}

		_, err = c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
	})
}

func TestDeactivateClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		b.MustPushPull()
		bw := b.Watch(t)
		if got := bw.Next(t).GetInitialization(); got == nil {
			t.Fatalf("first watch message is not the initialization")
		}

		_, err := c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: a.ID, Synchronous: true}))
		wire.Must(t, err, "deactivate")

		// The server detached a's document by itself: b pulls a's presence
		// clear change.
		before := len(b.Seen)
		b.MustPushPull()
		if len(b.Seen) <= before {
			t.Fatalf("after a deactivated, b pulled nothing; want a's presence-clear change")
		}

		_, err = a.PushPull(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeClientNotActivated)
		_, err = a.Attach(ctx, wire.UniqueKey(t, "doc"))
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeClientNotActivated)

		_, err = c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: unknownClientID}))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
	})
}

func TestUnknownClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		owner := attachedReplica(t, c)

		ghost := &wire.Replica{T: t, C: c, Client: sdksim.Client{ID: unknownClientID}, Seen: map[string]int{}, FailFast: true}
		ghost.Actor, _ = hex.DecodeString(unknownClientID)
		_, err := ghost.Attach(ctx, wire.UniqueKey(t, "doc"))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)

		ghost.DocID = owner.DocID
		_, err = ghost.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)

		// After a restart that lost everything, the client and its document
		// are both unknown: the client must hear about itself first, since
		// the SDK starts over on ErrClientNotFound but gives up silently on a
		// document error.
		ghost.DocID = "0123456789abcdef01234567"
		_, err = ghost.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
	})
}

func TestMalformedRequests(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		r := attachedReplica(t, c)
		goodPack := &api.ChangePack{DocumentKey: r.DocKey, Checkpoint: &api.Checkpoint{ServerSeq: r.ServerSeq, ClientSeq: r.Acked}}

		for _, id := range []string{"", "xyz", "abc", "0123456789ABCDEF01234567", strings.Repeat("ab", 100), "01 3"} {
			_, err := c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
				ClientId: id, DocumentId: r.DocID, ChangePack: goodPack,
			}))
			wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
			_, err = c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: id}))
			wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
		}

		_, err := c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.ID, ChangePack: goodPack}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
		_, err = c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.ID, DocumentId: r.DocID}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
		_, err = c.DetachDocument(ctx, connect.NewRequest(&api.DetachDocumentRequest{ClientId: r.ID, DocumentId: "../x", ChangePack: goodPack}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
		_, err = c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{ClientId: r.ID, DocumentId: r.DocID}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)

		for _, key := range []string{"", "has space", "slash/key", strings.Repeat("k", 121), "ünïcode"} {
			_, err := c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
				ClientId: r.ID, ChangePack: &api.ChangePack{DocumentKey: key, Checkpoint: &api.Checkpoint{}},
			}))
			wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)
		}
		_, err = c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{ClientId: r.ID}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)

		// A pack with no checkpoint is malformed.
		_, err = c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
			ClientId: r.ID, DocumentId: r.DocID, ChangePack: &api.ChangePack{DocumentKey: r.DocKey},
		}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidChangePack)

		// The server still serves the client normally.
		r.Edit(1)
		r.MustPushPull()
		if len(r.Pending) != 0 {
			t.Fatalf("change not acknowledged after malformed requests")
		}
	})
}

func TestDocumentNotAttached(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.MustAttach(wire.UniqueKey(t, "doc"))
		b.DocID, b.DocKey = a.DocID, a.DocKey
		b.Edit(1)
		_, err := b.PushPull(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached)
		_, err = b.Detach(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached)
	})
}

func TestClientSeqGap(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		r := attachedReplica(t, c)
		// Skip client_seq 2: the server stored 1 and is sent 3.
		r.LastSeq++
		r.Acked++
		r.Edit(1)
		_, err := r.PushPull(ctx)
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidClientSeq)
	})
}

func TestResentChangesStoredOnce(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)

		a.Edit(2) // client_seq 2 and 3
		sent := append([]*api.Change(nil), a.Pending...)
		a.MustPushPull()
		if a.Acked != 3 {
			t.Fatalf("acknowledged client_seq %d, want 3", a.Acked)
		}
		// The acknowledgement is lost: the client re-sends 2 and 3 with a new 4.
		a.Acked = 1
		a.Pending = append(sent, a.Pending...)
		a.Edit(1)
		p, err := a.PushPull(ctx)
		wire.Must(t, err, "re-send")
		if got := p.GetCheckpoint().GetClientSeq(); got != 4 {
			t.Fatalf("acknowledged client_seq %d, want 4", got)
		}

		b.MustPushPull()
		for seq := 2; seq <= 4; seq++ {
			if n := b.Seen[fmt.Sprintf("%s/%d", a.ID, seq)]; n != 1 {
				t.Errorf("b pulled a's change %d %d times, want once", seq, n)
			}
		}
		// Nothing more is stored: b pulls nothing new.
		before := len(b.Seen)
		if p := b.MustPushPull(); len(p.GetChanges()) != 0 || len(b.Seen) != before {
			t.Fatalf("second pull returned %d changes, want 0", len(p.GetChanges()))
		}
	})
}

func TestPushPullExchange(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		docKey := wire.UniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.MustAttach(docKey)
		a.Edit(3)
		a.MustPushPull() // absorb fails the test if a's own changes come back

		// b attaches later and receives a's changes (with version vectors).
		resp, err := b.Attach(ctx, docKey)
		wire.Must(t, err, "attach b")
		if resp.GetDocumentId() != a.DocID {
			t.Fatalf("same key gave documents %s and %s", a.DocID, resp.GetDocumentId())
		}
		for seq := 1; seq <= 4; seq++ {
			if b.Seen[fmt.Sprintf("%s/%d", a.ID, seq)] != 1 {
				t.Fatalf("b did not pull a's change %d on attach; pulled %v", seq, b.Seen)
			}
		}

		// push_only: b's push is acknowledged, a's new changes are not returned.
		a.Edit(1)
		a.MustPushPull()
		b.Edit(2)
		p, err := b.PushOnly(ctx)
		wire.Must(t, err, "push only")
		if len(p.GetChanges()) != 0 {
			t.Fatalf("push_only answer carries %d changes", len(p.GetChanges()))
		}
		if got := p.GetCheckpoint().GetClientSeq(); got != b.LastSeq {
			t.Fatalf("push_only acknowledged %d, want %d", got, b.LastSeq)
		}
		b.MustPushPull()
		if b.Seen[fmt.Sprintf("%s/%d", a.ID, 5)] != 1 {
			t.Fatalf("b did not pull a's change 5 after push_only")
		}
		a.MustPushPull()
		if a.Seen[fmt.Sprintf("%s/%d", b.ID, 2)] != 1 || a.Seen[fmt.Sprintf("%s/%d", b.ID, 3)] != 1 {
			t.Fatalf("a did not pull b's changes: %v", a.Seen)
		}
	})
}

func TestVersionVectorOnEveryChange(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		// A presence-only change with no version vector at all.
		ch := a.NewChange(map[string]string{"cursor": "1"})
		ch.Id.VersionVector = nil
		_, err := a.PushPull(ctx)
		wire.Must(t, err, "push change without version vector")
		p := b.MustPushPull() // absorb checks every change has a version vector
		if len(p.GetChanges()) == 0 {
			t.Fatalf("b pulled no change")
		}
	})
}

func TestDetachDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, _ := attachedPair(t, c)
		clearSeq := a.LastSeq + 1
		p, err := a.Detach(ctx)
		wire.Must(t, err, "detach")
		if p.GetCheckpoint().GetClientSeq() != clearSeq {
			t.Fatalf("detach acknowledged %d, want %d", p.GetCheckpoint().GetClientSeq(), clearSeq)
		}
		b.MustPushPull()
		if b.Seen[fmt.Sprintf("%s/%d", a.ID, clearSeq)] != 1 {
			t.Fatalf("b did not pull a's presence-clear change: %v", b.Seen)
		}
		a.Edit(1)
		_, err = a.PushPull(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached)
	})
}

func TestRemoveDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a, b, docKey := attachedPair(t, c)
		pack := a.Pack()
		pack.IsRemoved = true
		resp, err := c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{
			ClientId: a.ID, DocumentId: a.DocID, ChangePack: pack,
		}))
		wire.Must(t, err, "remove")
		if !resp.Msg.GetChangePack().GetIsRemoved() {
			t.Fatalf("remove answer does not mark the document removed")
		}
		removedID := a.DocID

		// b learns of the removal on its next exchange, one way or the other.
		p, err := b.PushPull(ctx)
		if err != nil {
			wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeDocumentRemoved)
		} else if !p.GetIsRemoved() {
			t.Fatalf("b's pushpull after removal: is_removed false")
		}

		// The key now names a new document.
		r := newReplica(t, c)
		r.MustAttach(docKey)
		if r.DocID == removedID {
			t.Fatalf("attaching a removed document's key gave the removed document %s", removedID)
		}
	})
}

// TestPackBeyondChangeLimit checks that a pack holding more changes than the
// server takes at once is acknowledged in part, and the rest on the next
// PushPull (the SDK re-sends unacknowledged changes), each stored once.
func TestPackBeyondChangeLimit(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a, b, _ := attachedPair(t, c)
		a.Edit(4) // client_seq 2 to 5
		a.MustPushPull()
		if a.Acked != 4 {
			t.Fatalf("first push of 4 changes with a limit of 3 acknowledged %d, want 4", a.Acked)
		}
		a.MustPushPull()
		if a.Acked != 5 || len(a.Pending) != 0 {
			t.Fatalf("second push acknowledged %d, want 5", a.Acked)
		}
		b.MustPushPull()
		for seq := 2; seq <= 5; seq++ {
			if n := b.Seen[fmt.Sprintf("%s/%d", a.ID, seq)]; n != 1 {
				t.Errorf("b pulled a's change %d %d times, want once", seq, n)
			}
		}
	}, func(cfg *server.Config) { cfg.MaxChangesPerPack = 3 })
}

func TestOversizedRequest(t *testing.T) {
	const limit = 2048
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		r := attachedReplica(t, c)
		ch := r.NewChange(nil)
		ch.Message = strings.Repeat("x", 2*limit)
		_, err := r.PushPull(wire.Context(t))
		// Not resource_exhausted: the JS SDK retries that for ever.
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeRequestTooLarge)

		// A request under the limit still works.
		ch.Message = "small"
		r.MustPushPull()
	}, func(cfg *server.Config) { cfg.MaxRequestBytes = limit })
}

// TestReattach checks a client that detaches (or deactivates) and attaches
// the same document again with a fresh replica, as the SDK does: the attach
// answer carries the client's own changes of its earlier attachment, its
// client_seq restarts at 1, and its new edits reach others once.
func TestReattach(t *testing.T) {
	for _, how := range []string{"detach", "deactivate"} {
		t.Run(how, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
				ctx := wire.Context(t)
				a, b, docKey := attachedPair(t, c)
				a.Edit(2)
				a.MustPushPull()
				lastSeq := a.LastSeq
				if how == "detach" {
					_, err := a.Detach(ctx)
					wire.Must(t, err, "detach")
					lastSeq++
				}
				var earlier []string
				for seq := uint32(1); seq <= lastSeq; seq++ {
					earlier = append(earlier, a.Label(a.Generation, seq))
				}
				if how == "deactivate" {
					_, err := c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: a.ID}))
					wire.Must(t, err, "deactivate")
					// The activation makes a new client: the earlier
					// changes are another actor's now.
					again, err := wire.Activate(ctx, c, a.Key)
					wire.Must(t, err, "activate again")
					if again.ID <= a.ID {
						t.Fatalf("re-activation gave client %s, want a new ID above %s", again.ID, a.ID)
					}
					a.ID, a.Actor = again.ID, again.Actor
				}

				a.MustAttach(docKey)
				for seq, label := range earlier {
					if n := a.ByLabel[label]; n != 1 {
						t.Errorf("re-attach pulled a's earlier change %d %d times, want once", seq+1, n)
					}
				}
				if a.Acked != 1 {
					t.Fatalf("re-attach acknowledged client_seq %d, want 1", a.Acked)
				}
				a.Edit(1)
				a.MustPushPull()
				b.MustPushPull()
				for seq := uint32(1); seq <= 2; seq++ {
					if n := b.ByLabel[a.Label(a.Generation, seq)]; n != 1 {
						t.Errorf("b pulled a's new change %d %d times, want once", seq, n)
					}
				}
			})
		})
	}
}
