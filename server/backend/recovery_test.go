package backend_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// faultyDB wraps a database to simulate another writer and lost writes.
type faultyDB struct {
	database.Database
	// beforeAppend runs before each AppendChanges while set.
	beforeAppend func(ctx context.Context, docID string)
	// failAttachmentUpdates makes this many UpdateAttachment calls fail.
	failAttachmentUpdates atomic.Int32
}

var errInjected = errors.New("injected failure")

func (f *faultyDB) AppendChanges(ctx context.Context, docID string, epoch int64, changes []*database.Change) error {
	if f.beforeAppend != nil {
		f.beforeAppend(ctx, docID)
	}
	return f.Database.AppendChanges(ctx, docID, epoch, changes)
}

func (f *faultyDB) UpdateAttachment(ctx context.Context, a *database.Attachment, epoch int64) error {
	if f.failAttachmentUpdates.Add(-1) >= 0 {
		return errInjected
	}
	return f.Database.UpdateAttachment(ctx, a, epoch)
}

// attachFaulty returns a backend over a faultyDB and client "a" attached to
// "doc" with its first change stored.
func attachFaulty(t *testing.T) (db *faultyDB, b *backend.Backend, a, docID string) {
	t.Helper()
	db = &faultyDB{Database: memory.New()}
	b, _ = newBackend(t, db)
	a = activate(t, b, "a")
	docID, _, err := b.AttachDocument(context.Background(), defaultProject, 0, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return db, b, a, docID
}

func TestConflictingWriterIsDetectedAndRetried(t *testing.T) {
	ctx := context.Background()
	db, b, a, docID := attachFaulty(t)
	// Another writer (a stale owner) appends twice behind the backend's back.
	foreign := activate(t, b, "foreign")
	intrusions := 2
	db.beforeAppend = func(ctx context.Context, docID string) {
		if intrusions == 0 {
			return
		}
		intrusions--
		info, err := db.ClaimDocument(ctx, docID, 0)
		if err != nil {
			t.Error(err)
			return
		}
		seq := info.ServerSeq + 1
		c := edit(t, foreign, uint32(2-intrusions), 9)
		c.Id.ServerSeq = seq
		if err := db.Database.AppendChanges(ctx, docID, 0, []*database.Change{{ServerSeq: seq, ActorID: foreign, ClientSeq: c.Id.ClientSeq, Body: c}}); err != nil {
			t.Error(err)
		}
	}
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 2, edit(t, a, 2, 2)), false)
	if err != nil {
		t.Fatal(err)
	}
	log := storedLog(t, db, docID)
	checkLog(t, log)
	if len(log) != 4 || log[3].ActorID != a || resp.Checkpoint.ServerSeq != 4 || resp.Checkpoint.ClientSeq != 2 {
		t.Fatalf("after conflicts: log of %d, checkpoint %v", len(log), resp.Checkpoint)
	}
	if len(resp.Changes) != 2 {
		t.Fatalf("pulled %d changes, want the 2 foreign ones", len(resp.Changes))
	}
	if got := b.Metrics().Conflicts.Load(); got != 2 {
		t.Fatalf("conflicts counted %d, want 2", got)
	}
}

func TestLostCheckpointUpdateIsReconciledFromTheLog(t *testing.T) {
	ctx := context.Background()
	db, b, a, docID := attachFaulty(t)
	// The changes are stored but the attachment's new client_seq is not.
	db.failAttachmentUpdates.Store(1)
	if _, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 2, edit(t, a, 2, 2)), false); !errors.Is(err, errInjected) {
		t.Fatalf("push pull with failing attachment update: %v", err)
	}
	// The client resends; the backend must find 2 in the log and not
	// store it twice.
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(1, 3, edit(t, a, 2, 2), edit(t, a, 3, 3)), false)
	if err != nil {
		t.Fatal(err)
	}
	log := storedLog(t, db, docID)
	checkLog(t, log)
	if len(log) != 3 || resp.Checkpoint.ClientSeq != 3 {
		t.Fatalf("log of %d changes, checkpoint %v; want 3 and client_seq 3", len(log), resp.Checkpoint)
	}
}

func TestFencedOwnerStopsServingTheDocument(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	const epoch = 1
	b, err := backend.New(backend.Config{DB: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	a := activate(t, b, "a")
	docID, _, err := b.AttachDocument(ctx, defaultProject, epoch, a, "doc", pack(0, 1, edit(t, a, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.Watch(ctx, defaultProject, epoch, a, docID)
	if err != nil {
		t.Fatal(err)
	}
	// A newer owner claims the document.
	if _, err := mem.ClaimDocument(ctx, docID, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PushPull(ctx, defaultProject, epoch, a, docID, pack(1, 2, edit(t, a, 2, 2)), false); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("push pull by a fenced owner: %v", err)
	}
	<-sub.Done()
	if !errors.Is(sub.Err(), database.ErrFenced) {
		t.Fatalf("subscription ended with %v", sub.Err())
	}
	if log := storedLog(t, mem, docID); len(log) != 1 {
		t.Fatalf("fenced owner stored changes: log of %d", len(log))
	}
	// Regaining ownership with a higher epoch serves it again.
	if _, err := b.PushPull(ctx, defaultProject, 3, a, docID, pack(1, 2, edit(t, a, 2, 2)), false); err != nil {
		t.Fatal(err)
	}
}

func TestPulledChangeWithoutVersionVectorGetsOne(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	b, _ := newBackend(t, mem)
	a := activate(t, b, "a")
	c := activate(t, b, "c")
	docID, _, _ := b.AttachDocument(ctx, defaultProject, 0, a, "doc", pack(0, 0))
	// A change stored by another server version, without a vector.
	body := edit(t, c, 1, 1)
	body.Id.VersionVector = nil
	body.Id.ServerSeq = 1
	if err := mem.AppendChanges(ctx, docID, 0, []*database.Change{{ServerSeq: 1, ActorID: c, ClientSeq: 1, Body: body}}); err != nil {
		t.Fatal(err)
	}
	if err := b.ReleaseDocument(ctx, docID, nil); err != nil { // reload the head
		t.Fatal(err)
	}
	resp, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 0), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Changes) != 1 || resp.Changes[0].Id.GetVersionVector() == nil {
		t.Fatalf("pulled %v", resp.Changes)
	}
	if body.Id.VersionVector != nil {
		t.Fatal("the stored change was mutated")
	}
}
