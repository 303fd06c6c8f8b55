package backend_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// vvKey is the client's actor as version vectors name it on the wire.
func vvKey(tb testing.TB, clientID string) string {
	tb.Helper()
	b, err := hex.DecodeString(clientID)
	if err != nil {
		tb.Fatal(err)
	}
	return sdksim.VectorKey(b)
}

// report sends a pack carrying only the vector vv and returns the answer.
func report(tb testing.TB, b *backend.Backend, clientID, docID string, vv map[string]int64) *api.ChangePack {
	tb.Helper()
	p := pack(0, 0)
	p.VersionVector = &api.VersionVector{Vector: vv}
	resp, err := b.PushPull(context.Background(), defaultProject, 0, clientID, docID, p, false)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

func wantVector(tb testing.TB, what string, resp *api.ChangePack, want map[string]int64) {
	tb.Helper()
	if got := resp.GetVersionVector().GetVector(); !maps.Equal(got, want) {
		tb.Fatalf("%s: minimum synced vector %v, want %v", what, got, want)
	}
}

// TestMinimumSyncedVersionVectorIsExact checks that every answer carries the
// minimum over the attached clients' vectors as they are after the request,
// so that a replica may purge a removal as soon as every peer has synced
// past it.
func TestMinimumSyncedVersionVectorIsExact(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	ka, kc := vvKey(t, a), vvKey(t, c)

	wantVector(t, "c has reported nothing", report(t, b, a, docID, map[string]int64{ka: 5, kc: 2}),
		map[string]int64{ka: 0, kc: 0})
	wantVector(t, "both reported", report(t, b, c, docID, map[string]int64{ka: 3, kc: 1}),
		map[string]int64{ka: 3, kc: 1})
	// c catches up with a: the minimum rises at once, in c's own answer.
	wantVector(t, "c caught up", report(t, b, c, docID, map[string]int64{ka: 5, kc: 4}),
		map[string]int64{ka: 5, kc: 2})
	wantVector(t, "a caught up", report(t, b, a, docID, map[string]int64{ka: 6, kc: 4}),
		map[string]int64{ka: 5, kc: 4})

	// A new client holds the minimum down until it has synced, and lets it
	// rise again when it detaches.
	d := activate(t, b, "d")
	kd := vvKey(t, d)
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, d, "doc", pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	wantVector(t, "d attached", report(t, b, a, docID, map[string]int64{ka: 6, kc: 4}),
		map[string]int64{ka: 0, kc: 0})
	wantVector(t, "d synced", report(t, b, d, docID, map[string]int64{ka: 6, kc: 4, kd: 1}),
		map[string]int64{ka: 5, kc: 4, kd: 0})
	if _, err := b.DetachDocument(ctx, defaultProject, 0, d, docID, pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	wantVector(t, "d detached", report(t, b, c, docID, map[string]int64{ka: 6, kc: 4, kd: 1}),
		map[string]int64{ka: 6, kc: 4, kd: 0})
	// An actor no attached client names leaves the minimum.
	wantVector(t, "d forgotten", report(t, b, c, docID, map[string]int64{ka: 6, kc: 4}),
		map[string]int64{ka: 6, kc: 4})
}

// TestVersionVectorNamesOnlyKnownActors checks that a vector naming an actor
// the document does not know is refused, in the pack or in a change, and that
// such an attempt leaves nothing in the answers to other clients.
func TestVersionVectorNamesOnlyKnownActors(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	ka, kc := vvKey(t, a), vvKey(t, c)
	const initial = "AAAAAAAAAAAAAAAA"

	huge := map[string]int64{ka: 1}
	for i := range 100_000 {
		huge[sdksim.VectorKey(fmt.Appendf(nil, "actor%07d", i))] = 1
	}
	withPackVV := pack(0, 1, edit(t, a, 1, 1))
	withPackVV.VersionVector = &api.VersionVector{Vector: huge}
	withUnknown := pack(0, 1, edit(t, a, 1, 1))
	withUnknown.VersionVector = &api.VersionVector{Vector: map[string]int64{ka: 1, "bm90LWFuLWFjdG9y": 1}}
	withChangeVV := pack(0, 1, edit(t, a, 1, 1))
	withChangeVV.Changes[0].Id.VersionVector = &api.VersionVector{Vector: map[string]int64{ka: 1, "bm90LWFuLWFjdG9y": 1}}
	report(t, b, a, docID, map[string]int64{ka: 1, kc: 1})
	for name, p := range map[string]*api.ChangePack{
		"100k-entry pack vector":    withPackVV,
		"unknown actor in a pack":   withUnknown,
		"unknown actor in a change": withChangeVV,
	} {
		_, err := b.PushPull(ctx, defaultProject, 0, a, docID, p, false)
		if !errors.Is(err, backend.ErrInvalidVersionVector) || !errors.Is(err, backend.ErrInvalidChangePack) {
			t.Fatalf("%s: got %v, want ErrInvalidVersionVector", name, err)
		}
	}
	if log := storedLog(t, db, docID); len(log) != 0 {
		t.Fatalf("refused packs stored %d changes", len(log))
	}
	// Known actors pass: the clients that attached and the initial actor.
	report(t, b, a, docID, map[string]int64{ka: 1, kc: 1, initial: 0})
	wantVector(t, "c's answer after the attempts", report(t, b, c, docID, map[string]int64{ka: 1, kc: 1}),
		map[string]int64{ka: 1, kc: 1, initial: 0})
	// An attach with such a vector leaves no attachment behind.
	e := activate(t, b, "e")
	bad := pack(0, 0)
	bad.VersionVector = &api.VersionVector{Vector: map[string]int64{"bm90LWFuLWFjdG9y": 1}}
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, e, "doc", bad); !errors.Is(err, backend.ErrInvalidVersionVector) {
		t.Fatalf("attach with an unknown actor: got %v, want ErrInvalidVersionVector", err)
	}
	wantVector(t, "after the refused attach", report(t, b, c, docID, map[string]int64{ka: 1, kc: 1}),
		map[string]int64{ka: 1, kc: 1, initial: 0})
	if _, err := b.PushPull(ctx, defaultProject, 0, e, docID, pack(0, 0), false); !errors.Is(err, backend.ErrDocumentNotAttached) {
		t.Fatalf("push pull after a refused attach: got %v, want ErrDocumentNotAttached", err)
	}
	// A client that has left stays known: its changes remain in the log and
	// in the others' vectors.
	if _, err := b.DetachDocument(ctx, defaultProject, 0, a, docID, pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	report(t, b, c, docID, map[string]int64{ka: 1, kc: 1})
}

// TestRemovedDocumentAnswerCarriesPendingChanges checks that a client
// syncing a document another client removed gets, with is_removed, the
// changes it had not pulled, the remover's last ones included.
func TestRemovedDocumentAnswerCarriesPendingChanges(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	seen := report(t, b, c, docID, nil).Checkpoint.ServerSeq
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1, edit(t, a, 1, 1)), false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RemoveDocument(ctx, defaultProject, 0, a, docID, pack(0, 2, edit(t, a, 2, 2))); err != nil {
		t.Fatal(err)
	}
	resp, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(seen, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsRemoved {
		t.Fatal("answer after the removal lacks is_removed")
	}
	var got []uint32
	for _, ch := range resp.Changes {
		if hex.EncodeToString(ch.Id.ActorId) == a {
			got = append(got, ch.Id.ClientSeq)
		}
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("pulled a's changes %v with the removal, want [1 2]", got)
	}
	if resp.Checkpoint.ServerSeq <= seen || resp.VersionVector == nil {
		t.Fatalf("answer after the removal: checkpoint %v, vector %v", resp.Checkpoint, resp.VersionVector)
	}
}
