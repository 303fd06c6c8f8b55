package dbtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testListing: pages in ID order both ways, prefix search with its total,
// and neither removed documents nor another project's appear.
func testListing(t *testing.T, newDB NewDB) {
	ctx := testCtx(t)
	db := newDB(t)
	const project = "aaaaaaaaaaaaaaaaaaaaaaaa"
	var ids []string
	for _, key := range []string{"b-1", "a-1", "a-2", "c", "a-3"} {
		ids = append(ids, must(db.FindOrCreateDocument(ctx, project, key)).get(t).ID)
	}
	other := must(db.FindOrCreateDocument(ctx, database.DefaultProjectID, "a-other")).get(t)
	removed := must(db.FindOrCreateDocument(ctx, project, "a-removed")).get(t)
	require.NoError(t, db.RemoveDocument(ctx, removed.ID, 0))

	keysOf := func(docs []*database.DocInfo) []string {
		var out []string
		for _, d := range docs {
			require.Equal(t, project, d.ProjectID)
			out = append(out, d.Key)
		}
		return out
	}
	idsOf := func(docs []*database.DocInfo) []string {
		var out []string
		for _, d := range docs {
			out = append(out, d.ID)
		}
		return out
	}

	all := must(db.ListDocuments(ctx, project, "", 100, true)).get(t)
	require.Len(t, all, 5)
	require.ElementsMatch(t, ids, idsOf(all))
	for i := 1; i < len(all); i++ {
		require.Less(t, all[i-1].ID, all[i].ID, "forward pages are in ascending ID order")
	}
	first := must(db.ListDocuments(ctx, project, "", 2, true)).get(t)
	require.Equal(t, idsOf(all[:2]), idsOf(first))
	next := must(db.ListDocuments(ctx, project, first[1].ID, 2, true)).get(t)
	require.Equal(t, idsOf(all[2:4]), idsOf(next))
	back := must(db.ListDocuments(ctx, project, "", 2, false)).get(t)
	require.Equal(t, []string{all[4].ID, all[3].ID}, idsOf(back))
	before := must(db.ListDocuments(ctx, project, back[1].ID, 10, false)).get(t)
	require.Equal(t, []string{all[2].ID, all[1].ID, all[0].ID}, idsOf(before))
	require.Empty(t, must(db.ListDocuments(ctx, project, all[4].ID, 10, true)).get(t))
	require.Empty(t, must(db.ListDocuments(ctx, unknownID(), "", 10, true)).get(t))

	found, total, err := db.SearchDocuments(ctx, project, "a-", 2)
	require.NoError(t, err)
	require.Equal(t, 3, total, "removed documents and other projects' do not count")
	require.Equal(t, []string{"a-1", "a-2"}, keysOf(found))
	found, total, err = db.SearchDocuments(ctx, project, "a.", 10)
	require.NoError(t, err, "a prefix is not a pattern")
	require.Zero(t, total)
	require.Empty(t, found)
	found, total, err = db.SearchDocuments(ctx, project, "", 10)
	require.NoError(t, err)
	require.Equal(t, 5, total)
	require.Equal(t, []string{"a-1", "a-2", "a-3", "b-1", "c"}, keysOf(found))
	_, total, err = db.SearchDocuments(ctx, database.DefaultProjectID, "a-", 10)
	require.NoError(t, err)
	require.Equal(t, 1, total, other.Key)
}
