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
	"github.com/yorkie-affinity/yorkie/server/rpc"
)

// unknownClientID is well formed but belongs to no client.
const unknownClientID = "0123456789abcdef01234567"

func TestActivateClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		key := uniqueKey(t, "client")
		first, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{
			ClientKey: key, Metadata: map[string]string{"userID": "u1"},
		}))
		must(t, err, "activate")
		id := first.Msg.GetClientId()
		if len(id) != 24 || strings.ToLower(id) != id {
			t.Fatalf("client_id %q: want 24 lowercase hex characters", id)
		}
		if _, err := hex.DecodeString(id); err != nil {
			t.Fatalf("client_id %q is not hex: %v", id, err)
		}
		again, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key}))
		must(t, err, "activate again")
		if again.Msg.GetClientId() != id {
			t.Fatalf("same key gave client %s then %s", id, again.Msg.GetClientId())
		}
		other, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: key + "-other"}))
		must(t, err, "activate another key")
		if other.Msg.GetClientId() == id {
			t.Fatalf("two keys share client %s", id)
		}

		_, err = c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
	})
}

func TestDeactivateClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		a := newReplica(t, c)
		b := newReplica(t, c)
		docKey := uniqueKey(t, "doc")
		a.mustAttach(docKey)
		b.mustAttach(docKey)
		b.mustPushPull()
		bw := b.watch(t)
		if got := bw.next(t).GetInitialization(); got == nil {
			t.Fatalf("first watch message is not the initialization")
		}

		_, err := c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: a.id, Synchronous: true}))
		must(t, err, "deactivate")

		// The server detached a's document by itself: b pulls a's presence
		// clear change.
		before := len(b.seen)
		b.mustPushPull()
		if len(b.seen) <= before {
			t.Fatalf("after a deactivated, b pulled nothing; want a's presence-clear change")
		}

		_, err = a.pushPull(ctx, false)
		wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeClientNotActivated)
		_, err = a.attach(ctx, uniqueKey(t, "doc"))
		wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeClientNotActivated)

		_, err = c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: unknownClientID}))
		wantError(t, err, connect.CodeNotFound, rpc.CodeClientNotFound)
	})
}

func TestUnknownClient(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		owner := newReplica(t, c)
		owner.mustAttach(uniqueKey(t, "doc"))

		ghost := &replica{t: t, c: c, id: unknownClientID, seen: map[string]int{}}
		ghost.actor, _ = hex.DecodeString(unknownClientID)
		_, err := ghost.attach(ctx, uniqueKey(t, "doc"))
		wantError(t, err, connect.CodeNotFound, rpc.CodeClientNotFound)

		ghost.docID = owner.docID
		_, err = ghost.pushPull(ctx, false)
		wantError(t, err, connect.CodeNotFound, rpc.CodeClientNotFound)

		// After a restart that lost everything, the client and its document
		// are both unknown: the client must hear about itself first, since
		// the SDK starts over on ErrClientNotFound but gives up silently on a
		// document error.
		ghost.docID = "0123456789abcdef01234567"
		_, err = ghost.pushPull(ctx, false)
		wantError(t, err, connect.CodeNotFound, rpc.CodeClientNotFound)
	})
}

func TestMalformedRequests(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		r := newReplica(t, c)
		r.mustAttach(uniqueKey(t, "doc"))
		goodPack := &api.ChangePack{DocumentKey: r.docKey, Checkpoint: &api.Checkpoint{ServerSeq: r.serverSeq, ClientSeq: r.acked}}

		for _, id := range []string{"", "xyz", "abc", "0123456789ABCDEF01234567", strings.Repeat("ab", 100), "01 3"} {
			_, err := c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
				ClientId: id, DocumentId: r.docID, ChangePack: goodPack,
			}))
			wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
			_, err = c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: id}))
			wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
		}

		_, err := c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.id, ChangePack: goodPack}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
		_, err = c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{ClientId: r.id, DocumentId: r.docID}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
		_, err = c.DetachDocument(ctx, connect.NewRequest(&api.DetachDocumentRequest{ClientId: r.id, DocumentId: "../x", ChangePack: goodPack}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
		_, err = c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{ClientId: r.id, DocumentId: r.docID}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)

		for _, key := range []string{"", "has space", "slash/key", strings.Repeat("k", 121), "ünïcode"} {
			_, err := c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{
				ClientId: r.id, ChangePack: &api.ChangePack{DocumentKey: key, Checkpoint: &api.Checkpoint{}},
			}))
			wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)
		}
		_, err = c.AttachDocument(ctx, connect.NewRequest(&api.AttachDocumentRequest{ClientId: r.id}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidArgument)

		// A pack with no checkpoint is malformed.
		_, err = c.PushPullChanges(ctx, connect.NewRequest(&api.PushPullChangesRequest{
			ClientId: r.id, DocumentId: r.docID, ChangePack: &api.ChangePack{DocumentKey: r.docKey},
		}))
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidChangePack)

		// The server still serves the client normally.
		r.edit(1)
		r.mustPushPull()
		if len(r.pending) != 0 {
			t.Fatalf("change not acknowledged after malformed requests")
		}
	})
}

func TestDocumentNotAttached(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(uniqueKey(t, "doc"))
		b.docID, b.docKey = a.docID, a.docKey
		b.edit(1)
		_, err := b.pushPull(ctx, false)
		wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeDocumentNotAttached)
		_, err = b.detach(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeDocumentNotAttached)
	})
}

func TestClientSeqGap(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		r := newReplica(t, c)
		r.mustAttach(uniqueKey(t, "doc"))
		// Skip client_seq 2: the server stored 1 and is sent 3.
		r.lastSeq++
		r.acked++
		r.edit(1)
		_, err := r.pushPull(ctx, false)
		wantError(t, err, connect.CodeInvalidArgument, rpc.CodeInvalidClientSeq)
	})
}

func TestResentChangesStoredOnce(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)

		a.edit(2) // client_seq 2 and 3
		sent := append([]*api.Change(nil), a.pending...)
		a.mustPushPull()
		if a.acked != 3 {
			t.Fatalf("acknowledged client_seq %d, want 3", a.acked)
		}
		// The acknowledgement is lost: the client re-sends 2 and 3 with a new 4.
		a.acked = 1
		a.pending = append(sent, a.pending...)
		a.edit(1)
		p, err := a.pushPull(ctx, false)
		must(t, err, "re-send")
		if got := p.GetCheckpoint().GetClientSeq(); got != 4 {
			t.Fatalf("acknowledged client_seq %d, want 4", got)
		}

		b.mustPushPull()
		for seq := 2; seq <= 4; seq++ {
			if n := b.seen[fmt.Sprintf("%s/%d", a.id, seq)]; n != 1 {
				t.Errorf("b pulled a's change %d %d times, want once", seq, n)
			}
		}
		// Nothing more is stored: b pulls nothing new.
		before := len(b.seen)
		if p := b.mustPushPull(); len(p.GetChanges()) != 0 || len(b.seen) != before {
			t.Fatalf("second pull returned %d changes, want 0", len(p.GetChanges()))
		}
	})
}

func TestPushPullExchange(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		a.edit(3)
		a.mustPushPull() // absorb fails the test if a's own changes come back

		// b attaches later and receives a's changes (with version vectors).
		resp, err := b.attach(ctx, docKey)
		must(t, err, "attach b")
		if resp.GetDocumentId() != a.docID {
			t.Fatalf("same key gave documents %s and %s", a.docID, resp.GetDocumentId())
		}
		for seq := 1; seq <= 4; seq++ {
			if b.seen[fmt.Sprintf("%s/%d", a.id, seq)] != 1 {
				t.Fatalf("b did not pull a's change %d on attach; pulled %v", seq, b.seen)
			}
		}

		// push_only: b's push is acknowledged, a's new changes are not returned.
		a.edit(1)
		a.mustPushPull()
		b.edit(2)
		p, err := b.pushPull(ctx, true)
		must(t, err, "push only")
		if len(p.GetChanges()) != 0 {
			t.Fatalf("push_only answer carries %d changes", len(p.GetChanges()))
		}
		if got := p.GetCheckpoint().GetClientSeq(); got != b.lastSeq {
			t.Fatalf("push_only acknowledged %d, want %d", got, b.lastSeq)
		}
		b.mustPushPull()
		if b.seen[fmt.Sprintf("%s/%d", a.id, 5)] != 1 {
			t.Fatalf("b did not pull a's change 5 after push_only")
		}
		a.mustPushPull()
		if a.seen[fmt.Sprintf("%s/%d", b.id, 2)] != 1 || a.seen[fmt.Sprintf("%s/%d", b.id, 3)] != 1 {
			t.Fatalf("a did not pull b's changes: %v", a.seen)
		}
	})
}

func TestVersionVectorOnEveryChange(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)
		// A presence-only change with no version vector at all.
		ch := a.newChange(map[string]string{"cursor": "1"})
		ch.Id.VersionVector = nil
		_, err := a.pushPull(ctx, false)
		must(t, err, "push change without version vector")
		p := b.mustPushPull() // absorb checks every change has a version vector
		if len(p.GetChanges()) == 0 {
			t.Fatalf("b pulled no change")
		}
	})
}

func TestDetachDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)
		clearSeq := a.lastSeq + 1
		p, err := a.detach(ctx)
		must(t, err, "detach")
		if p.GetCheckpoint().GetClientSeq() != clearSeq {
			t.Fatalf("detach acknowledged %d, want %d", p.GetCheckpoint().GetClientSeq(), clearSeq)
		}
		b.mustPushPull()
		if b.seen[fmt.Sprintf("%s/%d", a.id, clearSeq)] != 1 {
			t.Fatalf("b did not pull a's presence-clear change: %v", b.seen)
		}
		a.edit(1)
		_, err = a.pushPull(ctx, false)
		wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeDocumentNotAttached)
	})
}

func TestRemoveDocument(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)
		pack := a.pack()
		pack.IsRemoved = true
		resp, err := c.RemoveDocument(ctx, connect.NewRequest(&api.RemoveDocumentRequest{
			ClientId: a.id, DocumentId: a.docID, ChangePack: pack,
		}))
		must(t, err, "remove")
		if !resp.Msg.GetChangePack().GetIsRemoved() {
			t.Fatalf("remove answer does not mark the document removed")
		}
		removedID := a.docID

		// b learns of the removal on its next exchange, one way or the other.
		p, err := b.pushPull(ctx, false)
		if err != nil {
			wantError(t, err, connect.CodeFailedPrecondition, rpc.CodeDocumentRemoved)
		} else if !p.GetIsRemoved() {
			t.Fatalf("b's pushpull after removal: is_removed false")
		}

		// The key now names a new document.
		r := newReplica(t, c)
		r.mustAttach(docKey)
		if r.docID == removedID {
			t.Fatalf("attaching a removed document's key gave the removed document %s", removedID)
		}
	})
}

// TestPackBeyondChangeLimit checks that a pack holding more changes than the
// server takes at once is acknowledged in part, and the rest on the next
// PushPull (the SDK re-sends unacknowledged changes), each stored once.
func TestPackBeyondChangeLimit(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		docKey := uniqueKey(t, "doc")
		a := newReplica(t, c)
		b := newReplica(t, c)
		a.mustAttach(docKey)
		b.mustAttach(docKey)
		a.edit(4) // client_seq 2 to 5
		a.mustPushPull()
		if a.acked != 4 {
			t.Fatalf("first push of 4 changes with a limit of 3 acknowledged %d, want 4", a.acked)
		}
		a.mustPushPull()
		if a.acked != 5 || len(a.pending) != 0 {
			t.Fatalf("second push acknowledged %d, want 5", a.acked)
		}
		b.mustPushPull()
		for seq := 2; seq <= 5; seq++ {
			if n := b.seen[fmt.Sprintf("%s/%d", a.id, seq)]; n != 1 {
				t.Errorf("b pulled a's change %d %d times, want once", seq, n)
			}
		}
	}, func(cfg *server.Config) { cfg.MaxChangesPerPack = 3 })
}

func TestOversizedRequest(t *testing.T) {
	const limit = 2048
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		r := newReplica(t, c)
		r.mustAttach(uniqueKey(t, "doc"))
		ch := r.newChange(nil)
		ch.Message = strings.Repeat("x", 2*limit)
		_, err := r.pushPull(testCtx(t), false)
		wantError(t, err, connect.CodeResourceExhausted, rpc.CodeRequestTooLarge)

		// A request under the limit still works.
		ch.Message = "small"
		r.mustPushPull()
	}, func(cfg *server.Config) { cfg.MaxRequestBytes = limit })
}

func TestUnimplementedRPCs(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := testCtx(t)
		r := newReplica(t, c)
		calls := map[string]func() error{
			"AttachChannel": func() error {
				_, err := c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: r.id, ChannelKey: "room"}))
				return err
			},
			"Broadcast": func() error {
				_, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: r.id, ChannelKey: "room"}))
				return err
			},
			"CreateRevision": func() error {
				_, err := c.CreateRevision(ctx, connect.NewRequest(&api.CreateRevisionRequest{ClientId: r.id}))
				return err
			},
			"ListRevisions": func() error {
				_, err := c.ListRevisions(ctx, connect.NewRequest(&api.ListRevisionsRequest{ClientId: r.id}))
				return err
			},
			"WatchChannel": func() error {
				s, err := c.WatchChannel(ctx, connect.NewRequest(&api.WatchChannelRequest{ClientId: r.id, ChannelKey: "room"}))
				if err != nil {
					return err
				}
				defer s.Close()
				for s.Receive() {
				}
				return s.Err()
			},
		}
		for name, call := range calls {
			t.Run(name, func(t *testing.T) {
				wantError(t, call(), connect.CodeUnimplemented, rpc.CodeUnimplemented)
			})
		}
	})
}

// TestReattach checks a client that detaches (or deactivates) and attaches
// the same document again with a fresh replica, as the SDK does: the attach
// answer carries the client's own changes of its earlier attachment, its
// client_seq restarts at 1, and its new edits reach others once.
func TestReattach(t *testing.T) {
	for _, how := range []string{"detach", "deactivate"} {
		t.Run(how, func(t *testing.T) {
			forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
				ctx := testCtx(t)
				docKey := uniqueKey(t, "doc")
				a := newReplica(t, c)
				b := newReplica(t, c)
				a.mustAttach(docKey)
				b.mustAttach(docKey)
				a.edit(2)
				a.mustPushPull()
				firstGen := a.generation
				lastSeq := a.lastSeq
				if how == "detach" {
					_, err := a.detach(ctx)
					must(t, err, "detach")
					lastSeq++
				} else {
					_, err := c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: a.id}))
					must(t, err, "deactivate")
					again, err := c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: a.key}))
					must(t, err, "activate again")
					if again.Msg.GetClientId() != a.id {
						t.Fatalf("re-activation gave client %s, want %s", again.Msg.GetClientId(), a.id)
					}
				}

				a.mustAttach(docKey)
				for seq := uint32(1); seq <= lastSeq; seq++ {
					if n := a.byLabel[a.label(firstGen, seq)]; n != 1 {
						t.Errorf("re-attach pulled a's earlier change %d %d times, want once", seq, n)
					}
				}
				if a.acked != 1 {
					t.Fatalf("re-attach acknowledged client_seq %d, want 1", a.acked)
				}
				a.edit(1)
				a.mustPushPull()
				b.mustPushPull()
				for seq := uint32(1); seq <= 2; seq++ {
					if n := b.byLabel[a.label(a.generation, seq)]; n != 1 {
						t.Errorf("b pulled a's new change %d %d times, want once", seq, n)
					}
				}
			})
		})
	}
}
