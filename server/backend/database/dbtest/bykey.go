package dbtest

import (
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testFindByKey checks FindDocumentByKey: the live document of a key with its
// head, the newest removed one once none is live, and no creation.
func testFindByKey(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	key := "by-key-" + unknownID()
	_, err := db.FindDocumentByKey(ctx, database.DefaultProjectID, key)
	wantErr(t, err, database.ErrDocumentNotFound, "FindDocumentByKey of an unused key")
	if _, err := db.FindDocumentByKey(ctx, database.DefaultProjectID, key); err == nil {
		t.Fatal("FindDocumentByKey created the document it did not find")
	}

	first := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, key)).get(t)
	if err := db.AppendChanges(ctx, first.ID, 0, batch(unknownID(), 1, 1, 3, "by-key")); err != nil {
		t.Fatalf("append: %v", err)
	}
	got := must(db.FindDocumentByKey(ctx, database.DefaultProjectID, key)).get(t)
	if got.ID != first.ID || got.Key != key || got.ServerSeq != 3 || !got.RemovedAt.IsZero() {
		t.Fatalf("live document = %+v, want ID %s at server_seq 3", got, first.ID)
	}

	if err := db.RemoveDocument(ctx, first.ID, 0); err != nil {
		t.Fatalf("remove: %v", err)
	}
	got = must(db.FindDocumentByKey(ctx, database.DefaultProjectID, key)).get(t)
	if got.ID != first.ID || got.RemovedAt.IsZero() || got.ServerSeq != 3 {
		t.Fatalf("removed document = %+v, want %s removed at server_seq 3", got, first.ID)
	}

	second := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, key)).get(t)
	if got := must(db.FindDocumentByKey(ctx, database.DefaultProjectID, key)).get(t); got.ID != second.ID || !got.RemovedAt.IsZero() {
		t.Fatalf("after the key was reused: %+v, want the live %s", got, second.ID)
	}
	if err := db.RemoveDocument(ctx, second.ID, 0); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if got := must(db.FindDocumentByKey(ctx, database.DefaultProjectID, key)).get(t); got.ID != second.ID {
		t.Fatalf("two removed documents: got %s, want the newer %s", got.ID, second.ID)
	}
}
