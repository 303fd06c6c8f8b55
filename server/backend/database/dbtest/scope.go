package dbtest

import (
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testProjectScope checks that projects never see each other's clients and
// documents: the same key names a document of each, and an ID of one
// project used with another is not found.
func testProjectScope(t *testing.T, newDB NewDB) {
	db := newDB(t)
	ctx := testCtx(t)
	a, b := database.DefaultProjectID, unknownID()

	t.Run("documents", func(t *testing.T) {
		da := must(db.FindOrCreateDocument(ctx, a, "shared")).get(t)
		db_ := must(db.FindOrCreateDocument(ctx, b, "shared")).get(t)
		if da.ID == db_.ID {
			t.Fatalf("two projects share document %s of key %q", da.ID, "shared")
		}
		if da.ProjectID != a || db_.ProjectID != b {
			t.Fatalf("documents of projects %s and %s: %+v, %+v", a, b, da, db_)
		}
		if got := must(db.FindOrCreateDocument(ctx, b, "shared")).get(t); got.ID != db_.ID {
			t.Fatalf("project %s found %s for its key, want %s", b, got.ID, db_.ID)
		}
		_, err := db.FindDocument(ctx, b, da.ID)
		wantErr(t, err, database.ErrDocumentNotFound, "FindDocument with another project's document ID")
		if got := must(db.FindDocument(ctx, a, da.ID)).get(t); got.Key != "shared" || got.ProjectID != a {
			t.Fatalf("FindDocument in its own project: %+v", got)
		}
		if got := must(db.FindDocumentByKey(ctx, b, "shared")).get(t); got.ID != db_.ID {
			t.Fatalf("FindDocumentByKey in project %s: %s, want %s", b, got.ID, db_.ID)
		}
		_, err = db.FindDocumentByKey(ctx, b, "only-in-a")
		wantErr(t, err, database.ErrDocumentNotFound, "FindDocumentByKey of a key never used in the project")
		must(db.FindOrCreateDocument(ctx, a, "only-in-a")).get(t)
		_, err = db.FindDocumentByKey(ctx, b, "only-in-a")
		wantErr(t, err, database.ErrDocumentNotFound, "FindDocumentByKey of another project's key")

		// Removing one project's document leaves the other's live.
		if err := db.RemoveDocument(ctx, da.ID, 0); err != nil {
			t.Fatal(err)
		}
		if got := must(db.FindOrCreateDocument(ctx, b, "shared")).get(t); got.ID != db_.ID || !got.RemovedAt.IsZero() {
			t.Fatalf("after project %s removed its document, project %s's is %+v", a, b, got)
		}
		fresh := must(db.FindOrCreateDocument(ctx, a, "shared")).get(t)
		if fresh.ID == da.ID || fresh.ID == db_.ID {
			t.Fatalf("after the removal project %s's key gave %s", a, fresh.ID)
		}
		if got := must(db.FindDocumentByKey(ctx, b, "shared")).get(t); got.ID != db_.ID {
			t.Fatalf("FindDocumentByKey in project %s after the removal in %s: %s, want %s", b, a, got.ID, db_.ID)
		}
	})

	t.Run("clients", func(t *testing.T) {
		ca := must(db.ActivateClient(ctx, a, "same-key", nil)).get(t)
		cb := must(db.ActivateClient(ctx, b, "same-key", nil)).get(t)
		if ca.ProjectID != a || cb.ProjectID != b || ca.ID == cb.ID {
			t.Fatalf("clients of one key in two projects: %+v, %+v", ca, cb)
		}
		_, err := db.FindClient(ctx, b, ca.ID)
		wantErr(t, err, database.ErrClientNotFound, "FindClient with another project's client ID")
		_, err = db.DeactivateClient(ctx, b, ca.ID)
		wantErr(t, err, database.ErrClientNotFound, "DeactivateClient with another project's client ID")
		if got := must(db.FindClient(ctx, a, ca.ID)).get(t); got.Status != database.ClientActivated || got.ProjectID != a {
			t.Fatalf("after another project tried to deactivate it, the client is %+v", got)
		}
		if got := must(db.DeactivateClient(ctx, a, ca.ID)).get(t); got.Status != database.ClientDeactivated {
			t.Fatalf("DeactivateClient in its own project: %+v", got)
		}
	})
}
