package dbtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testSchemas checks schema storage: a name and version unique within a
// project, versions and lists in order, removal, projects kept apart, and
// the binding of documents to schemas.
func testSchemas(t *testing.T, newDB NewDB) {
	db := newDB(t)
	ctx := testCtx(t)
	p, q := unknownID(), unknownID()
	rules := []database.Rule{
		{Path: "$.title", Type: "string"},
		{Path: "$.content", Type: "yorkie.Tree", TreeNodes: []database.TreeNodeRule{
			{NodeType: "doc", Content: "paragraph+"}, {NodeType: "paragraph", Content: "text*", Marks: "bold"},
		}},
	}
	in := &database.SchemaInfo{ProjectID: p, Name: "note", Version: 1, Body: "type Document = {title: string;};", Rules: rules}

	t.Run("create and find", func(t *testing.T) {
		s, err := db.CreateSchema(ctx, in)
		require.NoError(t, err)
		assert.Regexp(t, idPattern, s.ID)
		assert.False(t, s.CreatedAt.IsZero())
		assert.Equal(t, "note@1", s.Key())
		got, err := db.FindSchema(ctx, p, "note", 1)
		require.NoError(t, err)
		assert.Equal(t, s.ID, got.ID)
		assert.Equal(t, in.Body, got.Body)
		assert.Equal(t, rules, got.Rules)
		assert.WithinDuration(t, s.CreatedAt, got.CreatedAt, 1e6)

		_, err = db.CreateSchema(ctx, in)
		assert.ErrorIs(t, err, database.ErrSchemaAlreadyExists)
		_, err = db.FindSchema(ctx, p, "note", 2)
		assert.ErrorIs(t, err, database.ErrSchemaNotFound)
		_, err = db.FindSchema(ctx, q, "note", 1)
		assert.ErrorIs(t, err, database.ErrSchemaNotFound, "another project's schema")
	})

	t.Run("versions and list", func(t *testing.T) {
		for _, s := range []*database.SchemaInfo{
			{ProjectID: p, Name: "note", Version: 3, Body: "b3"},
			{ProjectID: p, Name: "note", Version: 2, Body: "b2"},
			{ProjectID: p, Name: "board", Version: 1, Body: "b"},
			{ProjectID: q, Name: "note", Version: 9, Body: "other project"},
		} {
			_, err := db.CreateSchema(ctx, s)
			require.NoError(t, err)
		}
		vs, err := db.FindSchemaVersions(ctx, p, "note")
		require.NoError(t, err)
		require.Len(t, vs, 3)
		assert.Equal(t, []int{3, 2, 1}, []int{vs[0].Version, vs[1].Version, vs[2].Version})
		_, err = db.FindSchemaVersions(ctx, p, "nothing")
		assert.ErrorIs(t, err, database.ErrSchemaNotFound)

		list, err := db.ListSchemas(ctx, p)
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, "board@1", list[0].Key())
		assert.Equal(t, "note@3", list[1].Key())
		empty, err := db.ListSchemas(ctx, unknownID())
		require.NoError(t, err)
		assert.Empty(t, empty)
	})

	t.Run("remove", func(t *testing.T) {
		require.NoError(t, db.RemoveSchema(ctx, p, "note", 3))
		assert.ErrorIs(t, db.RemoveSchema(ctx, p, "note", 3), database.ErrSchemaNotFound)
		assert.ErrorIs(t, db.RemoveSchema(ctx, p, "note", 9), database.ErrSchemaNotFound, "another project's version")
		_, err := db.FindSchema(ctx, q, "note", 9)
		require.NoError(t, err, "the other project's schema stays")
		list, err := db.ListSchemas(ctx, p)
		require.NoError(t, err)
		require.Len(t, list, 2)
		assert.Equal(t, "note@2", list[1].Key())
	})

	t.Run("documents", func(t *testing.T) {
		d, err := db.FindOrCreateDocument(ctx, p, "doc-with-schema")
		require.NoError(t, err)
		assert.Empty(t, d.Schema)
		inUse, err := db.SchemaInUse(ctx, p, "note@2")
		require.NoError(t, err)
		assert.False(t, inUse)

		require.NoError(t, db.SetDocumentSchema(ctx, d.ID, "note@2"))
		got, err := db.FindDocument(ctx, p, d.ID)
		require.NoError(t, err)
		assert.Equal(t, "note@2", got.Schema)
		got, err = db.FindOrCreateDocument(ctx, p, "doc-with-schema")
		require.NoError(t, err)
		assert.Equal(t, "note@2", got.Schema)
		inUse, err = db.SchemaInUse(ctx, p, "note@2")
		require.NoError(t, err)
		assert.True(t, inUse)
		inUse, err = db.SchemaInUse(ctx, q, "note@2")
		require.NoError(t, err)
		assert.False(t, inUse, "another project's document")

		require.NoError(t, db.SetDocumentSchema(ctx, d.ID, ""))
		got, err = db.FindDocument(ctx, p, d.ID)
		require.NoError(t, err)
		assert.Empty(t, got.Schema)
		inUse, err = db.SchemaInUse(ctx, p, "note@2")
		require.NoError(t, err)
		assert.False(t, inUse)

		require.NoError(t, db.SetDocumentSchema(ctx, d.ID, "note@2"))
		require.NoError(t, db.RemoveDocument(ctx, d.ID, 0))
		inUse, err = db.SchemaInUse(ctx, p, "note@2")
		require.NoError(t, err)
		assert.False(t, inUse, "a removed document uses no schema")

		assert.ErrorIs(t, db.SetDocumentSchema(ctx, unknownID(), "note@2"), database.ErrDocumentNotFound)
	})
}
