package backend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/backend/pubsub"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

func TestResendOfUnacknowledgedChangesIsDeduplicated(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, resp, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Checkpoint.ClientSeq != 1 || resp.Checkpoint.ServerSeq != 1 {
		t.Fatalf("attach checkpoint %v", resp.Checkpoint)
	}
	// The answer to this push is lost: the client sends 2 and 3 again
	// together with 4.
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 3, edit(t, a, 2, 2), edit(t, a, 3, 3)), false); err != nil {
		t.Fatal(err)
	}
	resp, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 4, edit(t, a, 2, 2), edit(t, a, 3, 3), edit(t, a, 4, 4)), false)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Checkpoint.ClientSeq != 4 || resp.Checkpoint.ServerSeq != 4 {
		t.Fatalf("checkpoint %v, want server_seq 4 client_seq 4", resp.Checkpoint)
	}
	// A resend of only acknowledged changes stores nothing.
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(4, 4, edit(t, a, 4, 4)), false); err != nil {
		t.Fatal(err)
	}
	log := storedLog(t, db, docID)
	checkLog(t, log)
	if len(log) != 4 {
		t.Fatalf("log has %d changes, want 4", len(log))
	}
}

func TestGapIsRejectedAndNothingStored(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 4, edit(t, a, 3, 3), edit(t, a, 4, 4)), false)
	if !errors.Is(err, backend.ErrInvalidClientSeq) {
		t.Fatalf("push after a gap: %v, want ErrInvalidClientSeq", err)
	}
	if log := storedLog(t, db, docID); len(log) != 1 {
		t.Fatalf("log has %d changes after a rejected gap, want 1", len(log))
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 3, edit(t, a, 2, 2), edit(t, a, 3, 3)), false); err != nil {
		t.Fatal(err)
	}
	_, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 2, edit(t, a, 2, 2)), false)
	if !errors.Is(err, backend.ErrInvalidClientSeq) {
		t.Fatalf("push going back below the stored client_seq: %v, want ErrInvalidClientSeq", err)
	}
	_, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 3, edit(t, a, 2, 2), edit(t, a, 4, 4)), false)
	if !errors.Is(err, backend.ErrInvalidChangePack) {
		t.Fatalf("non-consecutive pack: %v, want ErrInvalidChangePack", err)
	}
	if log := storedLog(t, db, docID); len(log) != 3 {
		t.Fatalf("log has %d changes after rejected pushes, want 3", len(log))
	}
}

func TestMalformedPacksAreRejected(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	other := activate(t, b, "other")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		pack *api.ChangePack
		want error
	}{
		"no checkpoint":     {&api.ChangePack{}, backend.ErrInvalidChangePack},
		"nil pack":          {nil, backend.ErrInvalidChangePack},
		"other actor":       {pack(0, 1, edit(t, other, 1, 1)), backend.ErrInvalidChangePack},
		"change without id": {pack(0, 1, &api.Change{}), backend.ErrInvalidChangePack},
	} {
		if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, tc.pack, false); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestOversizedPackIsAcknowledgedInPart(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	const total = backend.DefaultMaxChangesPerPack + 500
	changes := make([]*api.Change, total)
	for i := range changes {
		changes[i] = edit(t, a, uint32(i+1), int64(i+1))
	}
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, total, changes...), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Checkpoint.ClientSeq; got != backend.DefaultMaxChangesPerPack {
		t.Fatalf("acknowledged client_seq %d, want %d", got, backend.DefaultMaxChangesPerPack)
	}
	// The SDK sends the unacknowledged rest again.
	resp, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(resp.Checkpoint.ServerSeq, total, changes[resp.Checkpoint.ClientSeq:]...), false)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Checkpoint.ClientSeq != total {
		t.Fatalf("acknowledged client_seq %d, want %d", resp.Checkpoint.ClientSeq, total)
	}
	log := storedLog(t, db, docID)
	checkLog(t, log)
	if len(log) != total {
		t.Fatalf("log has %d changes, want %d", len(log), total)
	}
}

func TestPullExcludesOwnChangesAndCarriesVersionVectors(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	c := activate(t, b, "c")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	noVV := edit(t, a, 2, 2)
	noVV.Id.VersionVector = nil
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 2, noVV), false); err != nil {
		t.Fatal(err)
	}
	_, resp, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 1, edit(t, c, 1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Changes) != 2 {
		t.Fatalf("new client pulled %d changes, want a's 2", len(resp.Changes))
	}
	for _, ch := range resp.Changes {
		if ch.Id.VersionVector == nil {
			t.Fatalf("pulled change %d has no version vector", ch.Id.ServerSeq)
		}
	}
	if resp.VersionVector == nil {
		t.Fatal("response pack has no version vector")
	}
	resp, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 2), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Changes) != 1 || resp.Changes[0].Id.ServerSeq != 3 || resp.Checkpoint.ServerSeq != 3 {
		t.Fatalf("a pulled %v, want only c's change at 3", resp.Changes)
	}
}

func TestPushOnlyAnswersWithCheckpointOnly(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	c := activate(t, b, "c")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 1, edit(t, c, 1, 1))); err != nil {
		t.Fatal(err)
	}
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1, edit(t, a, 1, 2)), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Changes) != 0 || resp.Checkpoint.ClientSeq != 1 || resp.Checkpoint.ServerSeq != 0 {
		t.Fatalf("push-only answer: %v", resp)
	}
	resp, err = b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1), false)
	if err != nil || len(resp.Changes) != 1 {
		t.Fatalf("later pull: %v, %v; want c's change", resp, err)
	}
}

func TestConcurrentPushPullOnOneDocumentIsGapless(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	const clients, pushes = 16, 25
	ids := make([]string, clients)
	var docID string
	for i := range ids {
		ids[i] = activate(t, b, fmt.Sprint("c", i))
		id, _, err := b.AttachDocument(ctx, defaultProject, 0, ids[i], "doc", pack(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		docID = id
	}
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seen int64
			for s := uint32(1); s <= pushes; s++ {
				resp, err := b.PushPull(ctx, defaultProject, 0, id, docID, pack(seen, s, edit(t, id, s, int64(s))), false)
				if err != nil {
					t.Error(err)
					return
				}
				for _, c := range resp.Changes {
					if c.Id.ServerSeq <= seen {
						t.Errorf("pulled server_seq %d again after %d", c.Id.ServerSeq, seen)
					}
				}
				seen = resp.Checkpoint.ServerSeq
			}
		}()
	}
	wg.Wait()
	log := storedLog(t, db, docID)
	checkLog(t, log)
	if len(log) != clients*pushes {
		t.Fatalf("log has %d changes, want %d", len(log), clients*pushes)
	}
}

func TestWatchEventsFollowTheDocument(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	subA, watchers, err := b.Watch(ctx, defaultProject, 0, a, docID)
	if err != nil {
		t.Fatal(err)
	}
	defer subA.Close()
	if !slices.Equal(watchers, []string{a}) {
		t.Fatalf("watchers %v", watchers)
	}
	subC, watchers, err := b.Watch(ctx, defaultProject, 0, c, docID)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(watchers)
	if want := []string{a, c}; !slices.Equal(watchers, slices.Sorted(slices.Values(want))) {
		t.Fatalf("watchers %v", watchers)
	}
	if ev := nextEvent(t, subA); ev != (backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, Publisher: c}) {
		t.Fatalf("a got %v", ev)
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(0, 1, edit(t, c, 1, 1)), false); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, subA); ev != (backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, Publisher: c}) {
		t.Fatalf("a got %v", ev)
	}
	// c is not sent its own CHANGED: the first event it gets is a's.
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1, edit(t, a, 1, 2)), false); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, subC); ev != (backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, Publisher: a}) {
		t.Fatalf("c got %v, want CHANGED by a", ev)
	}
	// An empty PushPull stores nothing and announces nothing; the next
	// event a sees is c leaving.
	if _, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(2, 1), false); err != nil {
		t.Fatal(err)
	}
	subC.Close()
	if ev := nextEvent(t, subA); ev != (backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED, Publisher: c}) {
		t.Fatalf("a got %v", ev)
	}

	if _, _, err := b.Watch(ctx, defaultProject, 0, activate(t, b, "stranger"), docID); !errors.Is(err, backend.ErrDocumentNotAttached) {
		t.Fatalf("watch without attaching: %v", err)
	}
}

func TestDeactivateDetachesWithPresenceClear(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := activate(t, b, "a")
	c := activate(t, b, "c")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 5)))
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	subA, _, _ := b.Watch(ctx, defaultProject, 0, a, docID)
	subC, _, _ := b.Watch(ctx, defaultProject, 0, c, docID)
	defer subC.Close()
	nextEvent(t, subA) // WATCHED c

	if err := b.DeactivateClient(ctx, defaultProject, a, nil); err != nil {
		t.Fatal(err)
	}
	log := storedLog(t, db, docID)
	checkLog(t, log)
	last := log[len(log)-1]
	if last.ActorID != a || last.ClientSeq != 2 || last.Body.Id.Lamport != 5 ||
		last.Body.PresenceChange.GetType() != api.PresenceChange_CHANGE_TYPE_CLEAR {
		t.Fatalf("last change %v, want a's presence clear at client_seq 2 lamport 5", last.Body)
	}
	if ev := nextEvent(t, subC); ev.Type != api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED || ev.Publisher != a {
		t.Fatalf("c got %v, want CHANGED by a", ev)
	}
	<-subA.Done()
	if !errors.Is(subA.Err(), backend.ErrClientNotActivated) {
		t.Fatalf("a's subscription ended with %v", subA.Err())
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1), false); !errors.Is(err, backend.ErrClientNotActivated) {
		t.Fatalf("push pull after deactivation: %v", err)
	}
	if atts, _ := db.ListAttachments(ctx, docID); len(atts) != 1 || atts[0].ClientID != c {
		t.Fatalf("attachments after deactivation: %v", atts)
	}
	if err := b.DeactivateClient(ctx, defaultProject, "0123456789abcdef01234567", nil); !errors.Is(err, database.ErrClientNotFound) {
		t.Fatalf("deactivate unknown client: %v", err)
	}
}

func TestDetachThenReattachStartsAFreshAttachment(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	clear := edit(t, a, 2, 2)
	clear.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	if _, err := b.DetachDocument(ctx, defaultProject, 0, a, docID, pack(1, 2, clear)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(2, 2), false); !errors.Is(err, backend.ErrDocumentNotAttached) {
		t.Fatalf("push pull after detach: %v", err)
	}
	// A new document instance: client_seq from 1, checkpoint from 0. It
	// must get its earlier attachment's changes, not its new ones.
	id, resp, err := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if id != docID || len(resp.Changes) != 2 || resp.Checkpoint.ClientSeq != 1 || resp.Checkpoint.ServerSeq != 3 {
		t.Fatalf("re-attach answer: id %s, %v", id, resp)
	}
	// Its old presence must not come back: the SDK would apply the old CLEAR
	// to the presence it has just put.
	for _, c := range resp.Changes {
		if c.PresenceChange != nil {
			t.Fatalf("re-attach returned the client's old presence: %v", c)
		}
	}
	checkLog(t, storedLog(t, db, docID))
	// The stored log still holds the presence changes, for other readers.
	if stored := storedLog(t, db, docID); stored[1].Body.PresenceChange == nil {
		t.Fatal("stripping presence from the answer altered the stored change")
	}
}

func TestRemovedDocument(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	removal := pack(0, 0)
	removal.IsRemoved = true
	resp, err := b.RemoveDocument(ctx, defaultProject, 0, a, docID, removal)
	if err != nil || !resp.IsRemoved {
		t.Fatalf("remove: %v, %v", resp, err)
	}
	resp, err = b.PushPull(ctx, defaultProject, 0, c, docID, pack(0, 1, edit(t, c, 1, 1)), false)
	if err != nil || !resp.IsRemoved {
		t.Fatalf("push pull of a removed document: %v, %v", resp, err)
	}
	newID, _, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 0))
	if err != nil || newID == docID {
		t.Fatalf("attach of a removed document's key: %s, %v", newID, err)
	}
	if key, err := b.DocumentKey(ctx, defaultProject, docID); err != nil || key != "doc" {
		t.Fatalf("DocumentKey: %q, %v", key, err)
	}
}

func TestShutdownEndsSubscriptions(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	sub, _, err := b.Watch(ctx, defaultProject, 0, a, docID)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	<-sub.Done()
	if !errors.Is(sub.Err(), fault.ErrShuttingDown) {
		t.Fatalf("subscription ended with %v", sub.Err())
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 0), false); !errors.Is(err, fault.ErrShuttingDown) {
		t.Fatalf("push pull after Close: %v", err)
	}
}

func TestReleaseDocumentEndsSubscriptionsRetryably(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	sub, _, _ := b.Watch(ctx, defaultProject, 0, a, docID)
	if err := b.ReleaseDocument(ctx, docID, nil); err != nil {
		t.Fatal(err)
	}
	<-sub.Done()
	if !fault.IsRetryable(sub.Err()) || !errors.Is(sub.Err(), backend.ErrDocumentReleased) {
		t.Fatalf("subscription ended with %v", sub.Err())
	}
	// The state is reloaded from the database on the next call.
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1, edit(t, a, 1, 1)), false)
	if err != nil || resp.Checkpoint.ClientSeq != 1 {
		t.Fatalf("push pull after release: %v, %v", resp, err)
	}
}

func TestUnknownClientsAndDocuments(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a := activate(t, b, "a")
	if _, err := b.PushPull(ctx, defaultProject, 0, "0123456789abcdef01234567", "0123456789abcdef01234567", pack(0, 0), false); !errors.Is(err, database.ErrClientNotFound) {
		t.Fatalf("unknown client: %v", err)
	}
	if _, err := b.PushPull(ctx, defaultProject, 0, a, "0123456789abcdef01234567", pack(0, 0), false); !errors.Is(err, database.ErrDocumentNotFound) {
		t.Fatalf("unknown document: %v", err)
	}
	if _, err := b.DocumentKey(ctx, defaultProject, "0123456789abcdef01234567"); !errors.Is(err, database.ErrDocumentNotFound) {
		t.Fatalf("key of unknown document: %v", err)
	}
}

func TestSlowWatcherNeverBlocksPushPull(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	b, err := backend.New(backend.Config{DB: mem, WatchQueueSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	writer := activate(t, b, "writer")
	slow := activate(t, b, "slow")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, writer, "doc", pack(0, 0))
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, slow, "doc", pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.Watch(ctx, defaultProject, 0, slow, docID)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	// The slow watcher reads nothing while 500 changes are stored.
	for s := uint32(1); s <= 500; s++ {
		if _, err := b.PushPull(ctx, defaultProject, 0, writer, docID, pack(0, s, edit(t, writer, s, int64(s))), true); err != nil {
			t.Fatal(err)
		}
	}
	if ev := nextEvent(t, sub); ev.Type != api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
		t.Fatalf("slow watcher got %v", ev)
	}
	// Many watchers coming and going overflow its queue of WATCHED and
	// UNWATCHED: it is ended with a retryable error, not left behind.
	for i := range 10 {
		id := activate(t, b, fmt.Sprint("w", i))
		if _, _, err := b.AttachDocument(ctx, defaultProject, 0, id, "doc", pack(0, 0)); err != nil {
			t.Fatal(err)
		}
		s, _, err := b.Watch(ctx, defaultProject, 0, id, docID)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("overflowing watcher was not ended")
	}
	if !errors.Is(sub.Err(), pubsub.ErrSlowSubscriber) || !fault.IsRetryable(sub.Err()) {
		t.Fatalf("slow watcher ended with %v", sub.Err())
	}
}

// TestConcurrentLifecycles runs clients that attach, push, watch, detach and
// deactivate at once over a few documents; the race detector and the final
// logs judge it.
func TestConcurrentLifecycles(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, nil)
	docs := []string{"d0", "d1", "d2"}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := activate(t, b, fmt.Sprint("worker-", w))
			for round := range 5 {
				key := docs[(w+round)%len(docs)]
				docID, resp, err := b.AttachDocument(ctx, defaultProject, 0, id, key, pack(0, 1, edit(t, id, 1, 1)))
				if err != nil {
					t.Error(err)
					return
				}
				sub, _, err := b.Watch(ctx, defaultProject, 0, id, docID)
				if err != nil {
					t.Error(err)
					return
				}
				seen := resp.Checkpoint.ServerSeq
				for s := uint32(2); s <= 6; s++ {
					resp, err := b.PushPull(ctx, defaultProject, 0, id, docID, pack(seen, s, edit(t, id, s, int64(s))), false)
					if err != nil {
						t.Error(err)
						return
					}
					seen = resp.Checkpoint.ServerSeq
				}
				sub.Close()
				if round%2 == 0 {
					if _, err := b.DetachDocument(ctx, defaultProject, 0, id, docID, pack(seen, 6)); err != nil {
						t.Error(err)
						return
					}
				}
			}
			if err := b.DeactivateClient(ctx, defaultProject, id, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, key := range docs {
		info, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, key)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, storedLog(t, db, info.ID))
		if atts, _ := db.ListAttachments(ctx, info.ID); len(atts) != 0 {
			t.Fatalf("document %s still has %d attachments after every client left", key, len(atts))
		}
	}
}

// TestReattachWhileOldStreamLingers: a client detaches while the server
// still believes its old Watch stream open (a half-open connection), then
// attaches and watches again. The others must see it come back (WATCHED),
// and the stale stream must end.
func TestReattachWhileOldStreamLingers(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	a, c, docID := attachTwo(t, b)
	subA, _, err := b.Watch(ctx, defaultProject, 0, a, docID)
	if err != nil {
		t.Fatal(err)
	}
	defer subA.Close()
	stale, _, err := b.Watch(ctx, defaultProject, 0, c, docID) // never closed by its client
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, subA); ev.Type != api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED {
		t.Fatalf("first event %v, want WATCHED", ev)
	}
	if _, err := b.DetachDocument(ctx, defaultProject, 0, c, docID, pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stale.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the detached client's stream is still open")
	}
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	again, _, err := b.Watch(ctx, defaultProject, 0, c, docID)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for {
		ev := nextEvent(t, subA)
		if ev == (backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, Publisher: c}) {
			return
		}
		if ev.Type != api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED && ev.Type != api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED {
			t.Fatalf("unexpected event %v", ev)
		}
	}
}

// TestStalePresenceOfAReturningClientIsNotSent: a client leaves (presence
// CLEAR) and attaches again; another client pulling afterwards must not get
// the old CLEAR, which the SDK would apply to the client as it is now.
func TestStalePresenceOfAReturningClientIsNotSent(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	x := activate(t, b, "x")
	w := activate(t, b, "w")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, x, "doc", pack(0, 1, edit(t, x, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	clear := edit(t, x, 2, 1)
	clear.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	if _, err := b.DetachDocument(ctx, defaultProject, 0, x, docID, pack(1, 2, clear)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AttachDocument(ctx, defaultProject, 0, x, "doc", pack(0, 1, edit(t, x, 1, 2))); err != nil {
		t.Fatal(err)
	}
	_, resp, err := b.AttachDocument(ctx, defaultProject, 0, w, "doc", pack(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Changes) != 3 {
		t.Fatalf("late attacher got %d changes, want 3", len(resp.Changes))
	}
	for _, c := range resp.Changes[:2] {
		if c.PresenceChange != nil {
			t.Fatalf("change %d of x's earlier attachment came with its presence %v", c.Id.ServerSeq, c.PresenceChange)
		}
	}
	if p := resp.Changes[2].PresenceChange; p == nil || p.Type != api.PresenceChange_CHANGE_TYPE_PUT {
		t.Fatalf("x's current presence did not come: %v", resp.Changes[2])
	}
}
