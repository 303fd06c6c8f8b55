package backend_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// TestRevisions creates, lists, gets and restores revisions on each
// database: the restore is one stored change that a watcher hears of and
// an attached client pulls, after which the document is the revision's
// content and edits go on.
func TestRevisions(t *testing.T) {
	for _, dc := range databases() {
		t.Run(dc.name, func(t *testing.T) {
			ctx := context.Background()
			b, db := newBackend(t, dc.open(t))
			a, c := newWriter(t, b, "a"), newWriter(t, b, "c")
			a.attach("doc")
			c.attach("doc")
			a.mustPush(a.set("k1", "v1"), a.set("k2", "v2"))

			rev, err := b.CreateRevision(ctx, defaultProject, 0, a.id, a.docID, "v1", "first")
			require.NoError(t, err)
			assert.Equal(t, `{"k1":"v1","k2":"v2"}`, string(rev.Snapshot))
			assert.Equal(t, int64(2), rev.ServerSeq)
			for i := 2; i <= 3; i++ {
				a.mustPush(a.set("k1", fmt.Sprintf("v%d", i)))
				_, err := b.CreateRevision(ctx, defaultProject, 0, a.id, a.docID, fmt.Sprintf("v%d", i), "")
				require.NoError(t, err)
			}
			page, err := b.ListRevisions(ctx, defaultProject, c.id, a.docID, database.RevisionPaging{PageSize: 2})
			require.NoError(t, err)
			require.Len(t, page, 2)
			assert.Equal(t, []string{"v3", "v2"}, []string{page[0].Label, page[1].Label})
			page, err = b.ListRevisions(ctx, defaultProject, c.id, a.docID, database.RevisionPaging{PageSize: 2, Offset: 2})
			require.NoError(t, err)
			require.Len(t, page, 1)
			assert.Equal(t, "v1", page[0].Label)
			got, err := b.GetRevision(ctx, defaultProject, c.id, a.docID, rev.ID)
			require.NoError(t, err)
			assert.Equal(t, rev.Snapshot, got.Snapshot)

			sub, _, err := b.Watch(ctx, defaultProject, 0, c.id, a.docID)
			require.NoError(t, err)
			defer sub.Close()
			head := int64(len(storedLog(t, db, a.docID)))
			require.NoError(t, b.RestoreRevision(ctx, defaultProject, 0, c.id, a.docID, rev.ID))
			ev := nextEvent(t, sub)
			assert.Equal(t, api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED, ev.Type)
			log := storedLog(t, db, a.docID)
			require.Len(t, log, int(head)+1, "a restore is one change")
			checkLog(t, log)
			assert.Equal(t, "000000000000000000000000", log[head].ActorID)
			assert.Equal(t, `{"k1":"v1","k2":"v2"}`, replayJSON(t, db, a.docID, 1<<62))

			resp := c.mustPush()
			require.Len(t, resp.GetChanges(), len(log), "c pulls what it has not seen, the restore last")
			assert.Equal(t, "restore revision", resp.GetChanges()[len(log)-1].GetMessage())
			a.mustPush()
			a.mustPush(a.set("k3", "after"))
			assert.Equal(t, `{"k1":"v1","k2":"v2","k3":"after"}`, replayJSON(t, db, a.docID, 1<<62))
		})
	}
}

// TestRevisionBadInput: an unknown revision, another document's, and a
// removed document are refused with their errors, and nothing is stored.
func TestRevisionBadInput(t *testing.T) {
	for _, dc := range databases() {
		t.Run(dc.name, func(t *testing.T) {
			ctx := context.Background()
			b, db := newBackend(t, dc.open(t))
			a, c := newWriter(t, b, "a"), newWriter(t, b, "c")
			a.attach("doc")
			c.attach("other")
			a.mustPush(a.set("k", "v"))
			rev, err := b.CreateRevision(ctx, defaultProject, 0, a.id, a.docID, "kept", "")
			require.NoError(t, err)

			const unknown = "0123456789abcdef01234567"
			_, err = b.GetRevision(ctx, defaultProject, a.id, a.docID, unknown)
			require.ErrorIs(t, err, database.ErrRevisionNotFound)
			require.ErrorIs(t, b.RestoreRevision(ctx, defaultProject, 0, a.id, a.docID, unknown), database.ErrRevisionNotFound)
			require.ErrorIs(t, b.RestoreRevision(ctx, defaultProject, 0, c.id, c.docID, rev.ID), database.ErrRevisionNotFound, "another document's revision")
			_, err = b.ListRevisions(ctx, defaultProject, a.id, unknown, database.RevisionPaging{})
			require.ErrorIs(t, err, database.ErrDocumentNotFound)
			assert.Len(t, storedLog(t, db, a.docID), 1)
			assert.Empty(t, storedLog(t, db, c.docID))

			// A revision kept only in YSON the parser does not read is
			// refused, and nothing is stored.
			yson, err := db.CreateRevision(ctx, 0, &database.Revision{
				ProjectID: database.DefaultProjectID, DocID: a.docID, Label: "upstream", Snapshot: []byte(`{"k":DedupCounter(1)}`),
			})
			require.NoError(t, err)
			require.ErrorIs(t, b.RestoreRevision(ctx, defaultProject, 0, a.id, a.docID, yson.ID), backend.ErrRevisionNotRestorable)
			assert.Len(t, storedLog(t, db, a.docID), 1)

			_, err = b.RemoveDocument(ctx, defaultProject, 0, a.id, a.docID, pack(1, 1))
			require.NoError(t, err)
			before := len(storedLog(t, db, a.docID))
			require.ErrorIs(t, b.RestoreRevision(ctx, defaultProject, 0, "", a.docID, rev.ID), backend.ErrDocumentRemoved)
			assert.Len(t, storedLog(t, db, a.docID), before, "nothing stored")
			again, err := b.GetRevision(ctx, defaultProject, "", a.docID, rev.ID)
			require.NoError(t, err, "a removed document's revisions stay readable")
			assert.Equal(t, `{"k":"v"}`, string(again.Snapshot))
		})
	}
}

// TestAutoRevisions: a project that keeps revisions at snapshots (the
// default) gets one per stored snapshot, labelled as upstream's; one that
// turned them off gets none.
func TestAutoRevisions(t *testing.T) {
	for _, dc := range databases() {
		for _, enabled := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/enabled=%v", dc.name, enabled), func(t *testing.T) {
				ctx := context.Background()
				db := dc.open(t)
				p, err := db.EnsureDefaultProject(ctx, "owner")
				require.NoError(t, err)
				assert.True(t, p.AutoRevisionEnabled, "on by default")
				if !enabled {
					_, err := db.UpdateProject(ctx, "owner", p.ID, &database.ProjectUpdate{AutoRevisionEnabled: &enabled})
					require.NoError(t, err)
				}
				b, err := backend.New(backend.Config{DB: db, SnapshotInterval: 10})
				require.NoError(t, err)
				stored, err := db.FindProjectByID(ctx, database.DefaultProjectID)
				require.NoError(t, err)
				a := newWriterIn(stored, t, b, "a")
				a.attach("doc")
				for i := range 25 {
					a.mustPush(a.set(fmt.Sprintf("k%d", i%3), fmt.Sprint(i)))
				}
				require.NoError(t, b.Close(ctx), "close waits for the snapshot runs")
				revs, err := db.ListRevisions(ctx, database.DefaultProjectID, a.docID, database.RevisionPaging{Forward: true})
				require.NoError(t, err)
				if !enabled {
					assert.Empty(t, revs)
					return
				}
				require.NotEmpty(t, revs)
				last := revs[len(revs)-1]
				assert.Equal(t, "snapshot-20", last.Label)
				assert.Equal(t, "Auto created revision of snapshot #20", last.Description)
				got, err := db.FindRevision(ctx, database.DefaultProjectID, a.docID, last.ID)
				require.NoError(t, err)
				assert.Equal(t, `{"k0":"18","k1":"19","k2":"17"}`, string(got.Snapshot))
			})
		}
	}
}

// TestRestoreRevisionKeptAsYSON restores a revision that has no binary
// content, only upstream's YSON, as one imported from upstream Yorkie is:
// the document comes back to the YSON's content.
func TestRestoreRevisionKeptAsYSON(t *testing.T) {
	ctx := context.Background()
	b, db := newBackend(t, databases()[0].open(t))
	a := newWriter(t, b, "a")
	a.attach("doc")
	a.mustPush(a.set("k1", "v1"))
	doc, err := db.FindDocument(ctx, database.DefaultProjectID, a.docID)
	require.NoError(t, err)
	rev, err := db.CreateRevision(ctx, 0, &database.Revision{
		ProjectID: doc.ProjectID, DocID: a.docID, Label: "imported",
		Snapshot: []byte(`{"k1":"old","n":Int(7),"t":Text([{"val":"hi"}])}`),
	})
	require.NoError(t, err)
	require.NoError(t, b.RestoreRevision(ctx, defaultProject, 0, a.id, a.docID, rev.ID))
	assert.Equal(t, `{"k1":"old","n":7,"t":[{"val":"hi"}]}`, replayJSON(t, db, a.docID, 1<<62))
}
