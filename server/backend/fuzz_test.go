package backend_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// FuzzPushPullPack feeds the backend change packs decoded from fuzz bytes,
// with fuzzed checkpoints, and checks it never panics, the log stays gapless
// with each client's client_seq values consecutive, a resent pack stores
// nothing new, and every answer is well formed.
func FuzzPushPullPack(f *testing.F) {
	seed := func(p *api.ChangePack) []byte {
		data, err := proto.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	const seedClient = "0123456789abcdef01234567"
	f.Add(seed(pack(0, 0)), int64(0), uint32(0), uint8(0))
	f.Add(seed(pack(1, 2, edit(f, seedClient, 2, 2), edit(f, seedClient, 3, 3))), int64(1), uint32(3), uint8(1))
	f.Add(seed(pack(0, 5, edit(f, seedClient, 5, 5))), int64(7), uint32(5), uint8(2))
	f.Add([]byte{0x22, 0x02, 0x0a, 0x00}, int64(-1), uint32(1), uint8(3))

	f.Fuzz(func(t *testing.T, data []byte, serverSeq int64, clientSeq uint32, flags uint8) {
		ctx := context.Background()
		b, db := newBackend(t, nil)
		me := activate(t, b, "me")
		other := activate(t, b, "other")
		actor, _ := hex.DecodeString(me)
		docID, _, err := b.AttachDocument(ctx, defaultProject, 0, me, "doc", pack(0, 1, edit(t, me, 1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.AttachDocument(ctx, defaultProject, 0, other, "doc", pack(0, 1, edit(t, other, 1, 1))); err != nil {
			t.Fatal(err)
		}

		var p api.ChangePack
		if err := proto.Unmarshal(data, &p); err != nil {
			return
		}
		if flags&1 == 0 {
			// Mostly speak as the client, so the packs get past the actor
			// check and exercise dedup and gap handling.
			for _, c := range p.Changes {
				if c.GetId() != nil {
					c.Id.ActorId = actor
				}
			}
		}
		if flags&2 == 0 {
			p.Checkpoint = &api.Checkpoint{ServerSeq: serverSeq, ClientSeq: clientSeq}
		}
		pushOnly := flags&4 != 0
		resend := proto.Clone(&p).(*api.ChangePack)

		resp, err := b.PushPull(ctx, defaultProject, 0, me, docID, &p, pushOnly)
		log := storedLog(t, db, docID)
		checkLog(t, log)
		if err != nil {
			return
		}
		checkAnswer(t, resp, me, int64(len(log)), pushOnly)
		last, err := db.LastClientSeq(ctx, docID, me, 0)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Checkpoint.ClientSeq != last {
			t.Fatalf("acknowledged client_seq %d, stored %d", resp.Checkpoint.ClientSeq, last)
		}

		// The answer is lost and the client sends the same pack again.
		resp, err = b.PushPull(ctx, defaultProject, 0, me, docID, resend, pushOnly)
		if err != nil {
			t.Fatalf("resend of an accepted pack: %v", err)
		}
		if again := storedLog(t, db, docID); len(again) != len(log) {
			t.Fatalf("resend stored %d more changes", len(again)-len(log))
		}
		checkAnswer(t, resp, me, int64(len(log)), pushOnly)
	})
}

// checkAnswer checks what the SDK relies on in a PushPull answer.
func checkAnswer(t *testing.T, resp *api.ChangePack, clientID string, head int64, pushOnly bool) {
	t.Helper()
	actor, _ := hex.DecodeString(clientID)
	if resp.Checkpoint == nil || resp.Checkpoint.ServerSeq > head || resp.Checkpoint.ServerSeq < 0 {
		t.Fatalf("answer checkpoint %v with head %d", resp.Checkpoint, head)
	}
	if pushOnly && len(resp.Changes) != 0 {
		t.Fatalf("push-only answer has %d changes", len(resp.Changes))
	}
	if resp.VersionVector == nil {
		t.Fatal("answer without a version vector")
	}
	prev := int64(0)
	for _, c := range resp.Changes {
		if c.Id.GetVersionVector() == nil {
			t.Fatalf("change %d without version vector", c.Id.GetServerSeq())
		}
		if bytes.Equal(c.Id.ActorId, actor) {
			t.Fatalf("own change %d sent back", c.Id.ServerSeq)
		}
		if c.Id.ServerSeq <= prev {
			t.Fatalf("changes out of order: %d after %d", c.Id.ServerSeq, prev)
		}
		prev = c.Id.ServerSeq
	}
}
