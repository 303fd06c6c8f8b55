package memory_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

var hexID = regexp.MustCompile(`^[0-9a-f]{24}$`)

func change(seq int64, actor string, clientSeq uint32) *database.Change {
	return &database.Change{
		ServerSeq: seq,
		ActorID:   actor,
		ClientSeq: clientSeq,
		Body:      &api.Change{Id: &api.ChangeID{ServerSeq: seq, ClientSeq: clientSeq}},
	}
}

func TestClientsAreCloned(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	c1, err := db.ActivateClient(ctx, database.DefaultProjectID, "alice", map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if !hexID.MatchString(c1.ID) {
		t.Fatalf("client ID %q is not 24 lowercase hex chars", c1.ID)
	}
	c1.Metadata["k"] = "mutated"
	c2, err := db.FindClient(ctx, database.DefaultProjectID, c1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Metadata["k"] != "v" {
		t.Fatalf("stored metadata was changed through a returned copy: %v", c2.Metadata)
	}
	if _, err := db.FindClient(ctx, database.DefaultProjectID, "000000000000000000000000"); !errors.Is(err, database.ErrClientNotFound) {
		t.Fatalf("FindClient of unknown ID: %v", err)
	}
}

func TestRemovedKeyStartsNewDocument(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d1, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if again.ID != d1.ID {
		t.Fatalf("same key gave documents %s and %s", d1.ID, again.ID)
	}
	if err := db.RemoveDocument(ctx, d1.ID, 0); err != nil {
		t.Fatal(err)
	}
	d2, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if d2.ID == d1.ID {
		t.Fatal("removed document's key returned the removed document")
	}
	old, err := db.FindDocument(ctx, database.DefaultProjectID, d1.ID)
	if err != nil || old.RemovedAt.IsZero() {
		t.Fatalf("removed document: %+v, %v", old, err)
	}
}

func TestAppendChangesIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if err := db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(1, "a", 1), change(2, "a", 2)}); err != nil {
		t.Fatal(err)
	}
	// A batch overlapping the head is refused whole.
	err := db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(2, "b", 1), change(3, "b", 2)})
	if !errors.Is(err, database.ErrConflict) {
		t.Fatalf("overlapping append: %v, want ErrConflict", err)
	}
	// A batch leaving a gap is refused too.
	if err := db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(4, "b", 1)}); err == nil {
		t.Fatal("append after a gap succeeded")
	}
	got, err := db.FindChanges(ctx, d.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ActorID != "a" || got[1].ServerSeq != 2 {
		t.Fatalf("log after refused appends: %v", got)
	}
	info, _ := db.ClaimDocument(ctx, d.ID, 0)
	if info.ServerSeq != 2 {
		t.Fatalf("head %d, want 2", info.ServerSeq)
	}
}

func TestEpochFencing(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if _, err := db.ClaimDocument(ctx, d.ID, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimDocument(ctx, d.ID, 4); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("claim with lower epoch: %v", err)
	}
	if err := db.AppendChanges(ctx, d.ID, 4, []*database.Change{change(1, "a", 1)}); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("append with lower epoch: %v", err)
	}
	att := &database.Attachment{ClientID: "a", DocID: d.ID, Status: database.Attached}
	if err := db.UpdateAttachment(ctx, att, 4); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("attachment update with lower epoch: %v", err)
	}
	if err := db.RemoveDocument(ctx, d.ID, 4); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("remove with lower epoch: %v", err)
	}
	if err := db.AppendChanges(ctx, d.ID, 5, []*database.Change{change(1, "a", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimDocument(ctx, d.ID, 0); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("claim with epoch 0 after epoch 5: %v", err)
	}
	info, err := db.ClaimDocument(ctx, d.ID, 5)
	if err != nil || info.Epoch != 5 || info.ServerSeq != 1 {
		t.Fatalf("reclaim by the owner: %+v, %v", info, err)
	}
}

func TestAttachmentsAreClonedAndListed(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d1, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "d1")
	d2, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "d2")
	vv := map[string]int64{"x": 1}
	a := &database.Attachment{ClientID: "c", DocID: d1.ID, Status: database.Attached, VersionVector: vv}
	if err := db.UpdateAttachment(ctx, a, 0); err != nil {
		t.Fatal(err)
	}
	vv["x"] = 99
	if err := db.UpdateAttachment(ctx, &database.Attachment{ClientID: "c", DocID: d2.ID, Status: database.Detached}, 0); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindAttachment(ctx, "c", d1.ID)
	if err != nil || got.VersionVector["x"] != 1 {
		t.Fatalf("attachment: %+v, %v", got, err)
	}
	got.VersionVector["x"] = 7
	list, _ := db.ListClientAttachments(ctx, "c")
	if len(list) != 1 || list[0].DocID != d1.ID || list[0].VersionVector["x"] != 1 {
		t.Fatalf("client attachments: %+v", list)
	}
	docList, _ := db.ListAttachments(ctx, d2.ID)
	if len(docList) != 0 {
		t.Fatalf("detached attachment listed: %+v", docList)
	}
	if _, err := db.FindAttachment(ctx, "other", d1.ID); !errors.Is(err, database.ErrAttachmentNotFound) {
		t.Fatalf("missing attachment: %v", err)
	}
}

func TestLastClientSeq(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	batch := []*database.Change{change(1, "a", 1), change(2, "b", 1), change(3, "a", 2), change(4, "a", 1)}
	if err := db.AppendChanges(ctx, d.ID, 0, batch); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		actor string
		after int64
		want  uint32
	}{{"a", 0, 2}, {"a", 3, 1}, {"b", 2, 0}, {"b", 0, 1}, {"z", 0, 0}} {
		got, err := db.LastClientSeq(ctx, d.ID, tc.actor, tc.after)
		if err != nil || got != tc.want {
			t.Errorf("LastClientSeq(%s, after %d) = %d, %v; want %d", tc.actor, tc.after, got, err, tc.want)
		}
	}
}

func TestConcurrentAppendersNeverInterleave(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	d, _ := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor := string(rune('a' + w))
			for i := uint32(1); i <= 50; {
				info, err := db.ClaimDocument(ctx, d.ID, 0)
				if err != nil {
					t.Error(err)
					return
				}
				seq := info.ServerSeq + 1
				err = db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(seq, actor, i), change(seq+1, actor, i+1)})
				if errors.Is(err, database.ErrConflict) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				i += 2
			}
		}()
	}
	wg.Wait()
	log, _ := db.FindChanges(ctx, d.ID, 1, 1<<40)
	if len(log) != 8*50 {
		t.Fatalf("log has %d changes, want %d", len(log), 8*50)
	}
	for i, c := range log {
		if c.ServerSeq != int64(i+1) {
			t.Fatalf("change %d has server_seq %d", i, c.ServerSeq)
		}
		if c.ClientSeq%2 == 0 && log[i-1].ActorID != c.ActorID {
			t.Fatalf("batches interleaved at server_seq %d", c.ServerSeq)
		}
	}
}

func TestClosedDatabaseIsUnavailable(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	_ = db.Close(ctx)
	if _, err := db.ActivateClient(ctx, database.DefaultProjectID, "k", nil); !errors.Is(err, database.ErrUnavailable) {
		t.Fatalf("call after Close: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := memory.New().FindOrCreateDocument(cctx, database.DefaultProjectID, "d"); !errors.Is(err, context.Canceled) {
		t.Fatalf("call with cancelled context: %v", err)
	}
}
