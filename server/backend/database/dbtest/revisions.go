package dbtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testRevisions checks storing, paging and finding revisions, their scope
// and their fencing.
func testRevisions(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	d := docWithLog(t, ctx, db, 3)
	pid := database.DefaultProjectID

	empty, err := db.ListRevisions(ctx, pid, d.ID, database.RevisionPaging{})
	require.NoError(t, err)
	assert.Empty(t, empty)

	var ids []string
	for i := 1; i <= 5; i++ {
		in := &database.Revision{
			ProjectID: pid, DocID: d.ID,
			Label: fmt.Sprintf("v%d", i), Description: fmt.Sprintf("revision %d", i),
			Snapshot: []byte(fmt.Sprintf(`{"n":Int(%d)}`, i)), Content: []byte{byte(i), 0, 1, 2},
			ServerSeq: int64(i % 4),
		}
		r, err := db.CreateRevision(ctx, 0, in)
		require.NoError(t, err)
		assert.Regexp(t, idPattern, r.ID)
		assert.False(t, r.CreatedAt.IsZero())
		assert.Equal(t, in.Label, r.Label)
		if len(ids) > 0 {
			assert.Greater(t, r.ID, ids[len(ids)-1], "IDs rise in creation order")
		}
		ids = append(ids, r.ID)
	}

	got, err := db.FindRevision(ctx, pid, d.ID, ids[1])
	require.NoError(t, err)
	assert.Equal(t, "v2", got.Label)
	assert.Equal(t, "revision 2", got.Description)
	assert.Equal(t, `{"n":Int(2)}`, string(got.Snapshot))
	assert.Equal(t, []byte{2, 0, 1, 2}, got.Content)
	assert.Equal(t, int64(2), got.ServerSeq)
	assert.Equal(t, pid, got.ProjectID)
	assert.Equal(t, d.ID, got.DocID)

	labels := func(rs []*database.Revision) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Label
			assert.Nil(t, r.Snapshot, "a list leaves the content out")
			assert.Nil(t, r.Content, "a list leaves the content out")
		}
		return out
	}
	for _, c := range []struct {
		p    database.RevisionPaging
		want []string
	}{
		{database.RevisionPaging{}, []string{"v5", "v4", "v3", "v2", "v1"}},
		{database.RevisionPaging{Forward: true}, []string{"v1", "v2", "v3", "v4", "v5"}},
		{database.RevisionPaging{PageSize: 3}, []string{"v5", "v4", "v3"}},
		{database.RevisionPaging{PageSize: 3, Offset: 3}, []string{"v2", "v1"}},
		{database.RevisionPaging{PageSize: 2, Offset: 1, Forward: true}, []string{"v2", "v3"}},
		{database.RevisionPaging{PageSize: 2, Offset: 9}, []string{}},
	} {
		rs, err := db.ListRevisions(ctx, pid, d.ID, c.p)
		require.NoError(t, err)
		assert.Equal(t, c.want, labels(rs), "paging %+v", c.p)
	}

	// Scope: another document, another project, an unknown or malformed ID.
	other := newDoc(t, ctx, db)
	for _, c := range []struct{ project, doc, id string }{
		{pid, other.ID, ids[0]},
		{unknownID(), d.ID, ids[0]},
		{pid, d.ID, unknownID()},
		{pid, d.ID, "not-an-id"},
	} {
		_, err := db.FindRevision(ctx, c.project, c.doc, c.id)
		require.ErrorIs(t, err, database.ErrRevisionNotFound, "%+v", c)
	}
	rs, err := db.ListRevisions(ctx, unknownID(), d.ID, database.RevisionPaging{})
	require.NoError(t, err)
	assert.Empty(t, rs, "another project sees no revisions")

	_, err = db.CreateRevision(ctx, 0, &database.Revision{ProjectID: pid, DocID: unknownID(), Label: "x"})
	require.ErrorIs(t, err, database.ErrDocumentNotFound)
	_, err = db.CreateRevision(ctx, 0, &database.Revision{ProjectID: unknownID(), DocID: d.ID, Label: "x"})
	require.ErrorIs(t, err, database.ErrDocumentNotFound)

	// Fencing: once epoch 2 claimed the document, epoch 1 writes nothing.
	_, err = db.ClaimDocument(ctx, d.ID, 2)
	require.NoError(t, err)
	_, err = db.CreateRevision(ctx, 1, &database.Revision{ProjectID: pid, DocID: d.ID, Label: "stale"})
	require.ErrorIs(t, err, database.ErrFenced)
	_, err = db.CreateRevision(ctx, 2, &database.Revision{ProjectID: pid, DocID: d.ID, Label: "owner"})
	require.NoError(t, err)
	rs, err = db.ListRevisions(ctx, pid, d.ID, database.RevisionPaging{PageSize: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"owner", "v5"}, labels(rs))
}
