package admin_test

import (
	"context"

	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// attachWithSchema attaches the replica's document naming a schema key, as
// the SDK's attach with the schema option does.
func attachWithSchema(t *testing.T, r *wire.Replica, docKey, schemaKey string) (*api.AttachDocumentResponse, error) {
	t.Helper()
	r.Generation++
	r.Attached(docKey)
	r.NewChange(map[string]string{"name": `"x"`})
	resp, err := r.C.AttachDocument(ctxOf(t), connect.NewRequest(&api.AttachDocumentRequest{
		ClientId: r.ID, ChangePack: r.Pack(), SchemaKey: schemaKey,
	}))
	if err != nil {
		return nil, err
	}
	r.DocID = resp.Msg.GetDocumentId()
	require.NoError(t, r.Absorb(resp.Msg.GetChangePack()))
	return resp.Msg, nil
}

func TestSchemas(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) { c.DB = db })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		token := login(t, c, "admin", "admin")
		def, err := db.FindProjectByID(ctx, database.DefaultProjectID)
		require.NoError(t, err)
		secret := def.SecretKey

		countRule := []*api.Rule{{Path: "$.count", Type: "integer"}}
		t.Run("CRUD", func(t *testing.T) {
			res, err := c.CreateSchema(ctx, withKey(&api.CreateSchemaRequest{
				SchemaName: "note", SchemaVersion: 1, SchemaBody: "type Document = { count: integer; };", Rules: countRule,
			}, secret))
			require.NoError(t, err)
			s := res.Msg.Schema
			assert.Equal(t, "note", s.Name)
			assert.EqualValues(t, 1, s.Version)
			assert.Len(t, s.Id, 24)
			assert.NotNil(t, s.CreatedAt)
			require.Len(t, s.Rules, 1)
			assert.Equal(t, "$.count", s.Rules[0].Path)

			_, err = c.CreateSchema(ctx, withKey(&api.CreateSchemaRequest{SchemaName: "note", SchemaVersion: 1, SchemaBody: "type Document = {};"}, secret))
			wantCode(t, err, connect.CodeAlreadyExists, "ErrSchemaAlreadyExists")
			// Schema calls name no project: an admin token alone does not
			// say which, as upstream.
			_, err = c.CreateSchema(ctx, authed(&api.CreateSchemaRequest{
				SchemaName: "note", SchemaVersion: 2, SchemaBody: "type Document = {};",
			}, token))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			_, err = c.CreateSchema(ctx, withKey(&api.CreateSchemaRequest{
				SchemaName: "note", SchemaVersion: 2, SchemaBody: "type Document = {};",
			}, secret))
			require.NoError(t, err)

			got, err := c.GetSchema(ctx, withKey(&api.GetSchemaRequest{SchemaName: "note", Version: 1}, secret))
			require.NoError(t, err)
			assert.Equal(t, s.Id, got.Msg.Schema.Id)
			assert.Equal(t, "type Document = { count: integer; };", got.Msg.Schema.Body)
			versions, err := c.GetSchemas(ctx, withKey(&api.GetSchemasRequest{SchemaName: "note"}, secret))
			require.NoError(t, err)
			require.Len(t, versions.Msg.Schemas, 2)
			assert.EqualValues(t, 2, versions.Msg.Schemas[0].Version)
			list, err := c.ListSchemas(ctx, withKey(&api.ListSchemasRequest{}, secret))
			require.NoError(t, err)
			require.Len(t, list.Msg.Schemas, 1)
			assert.EqualValues(t, 2, list.Msg.Schemas[0].Version, "the newest version of each name")

			_, err = c.GetSchema(ctx, withKey(&api.GetSchemaRequest{SchemaName: "note", Version: 7}, secret))
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
			_, err = c.GetSchemas(ctx, withKey(&api.GetSchemasRequest{SchemaName: "nothing"}, secret))
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
			wantCode(t, removeSchema(t, c, secret, "nothing", 1), connect.CodeNotFound, "ErrSchemaNotFound")
			require.NoError(t, removeSchema(t, c, secret, "note", 2))
			_, err = c.GetSchema(ctx, withKey(&api.GetSchemaRequest{SchemaName: "note", Version: 2}, secret))
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
		})

		t.Run("BadInput", func(t *testing.T) {
			bad := map[string]*api.CreateSchemaRequest{
				"short name":     {SchemaName: "n", SchemaVersion: 1},
				"reserved name":  {SchemaName: "new", SchemaVersion: 1},
				"slash in name":  {SchemaName: "a/b", SchemaVersion: 1},
				"version 0":      {SchemaName: "bad", SchemaVersion: 0},
				"unknown type":   {SchemaName: "bad", SchemaVersion: 1, Rules: []*api.Rule{{Path: "$.a", Type: "yorkie.Map"}}},
				"path without $": {SchemaName: "bad", SchemaVersion: 1, Rules: []*api.Rule{{Path: "a", Type: "string"}}},
				"tree nodes on a string": {SchemaName: "bad", SchemaVersion: 1, Rules: []*api.Rule{{
					Path: "$.a", Type: "string", TreeNodes: []*api.TreeNodeRule{{NodeType: "doc"}}}}},
				"content that does not parse": {SchemaName: "bad", SchemaVersion: 1, Rules: []*api.Rule{{
					Path: "$.a", Type: "yorkie.Tree", TreeNodes: []*api.TreeNodeRule{{NodeType: "doc", Content: "(paragraph"}}}}},
			}
			for name, req := range bad {
				t.Run(name, func(t *testing.T) {
					_, err := c.CreateSchema(ctx, withKey(req, secret))
					wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
					_, err = c.GetSchemas(ctx, withKey(&api.GetSchemasRequest{SchemaName: "bad"}, secret))
					wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
				})
			}
			for name, header := range map[string]string{
				"no authorization": "", "unknown secret key": "API-Key nope", "empty secret key": "API-Key ",
				"forged token": "Bearer abc.def.ghi",
			} {
				t.Run(name, func(t *testing.T) {
					req := connect.NewRequest(&api.ListSchemasRequest{})
					if header != "" {
						req.Header().Set("Authorization", header)
					}
					_, err := c.ListSchemas(ctx, req)
					wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
				})
			}
			// Another project's schemas are not this one's.
			other, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "other-app"}, token))
			require.NoError(t, err)
			_, err = c.GetSchema(ctx, withKey(&api.GetSchemaRequest{SchemaName: "note", Version: 1}, other.Msg.Project.SecretKey))
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
			list, err := c.ListSchemas(ctx, withKey(&api.ListSchemasRequest{}, other.Msg.Project.SecretKey))
			require.NoError(t, err)
			assert.Empty(t, list.Msg.Schemas)
		})

		t.Run("Attach", func(t *testing.T) {
			yc := servertest.Client(t, srv, servertest.ConnectJSON)
			r := wire.NewReplica(t, yc)
			_, err := attachWithSchema(t, r, wire.UniqueKey(t, "doc"), "nothing@1")
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
			r = wire.NewReplica(t, yc)
			_, err = attachWithSchema(t, r, wire.UniqueKey(t, "doc"), "note")
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidSchemaKey")

			docKey := wire.UniqueKey(t, "doc")
			r = wire.NewReplica(t, yc)
			res, err := attachWithSchema(t, r, docKey, "note@1")
			require.NoError(t, err)
			require.Len(t, res.SchemaRules, 1)
			assert.Equal(t, "integer", res.SchemaRules[0].Type)
			// In use: it cannot be removed.
			wantCode(t, removeSchema(t, c, secret, "note", 1), connect.CodeFailedPrecondition, "ErrSchemaInUse")

			// A second client naming no schema, or another one, gets the
			// document's rules.
			r2 := wire.NewReplica(t, yc)
			res2, err := attachWithSchema(t, r2, docKey, "")
			require.NoError(t, err)
			require.Len(t, res2.SchemaRules, 1)

			// A change that keeps the rules is stored; one that breaks them
			// (sent without the SDK's check: a string where the rule wants
			// an integer) is refused and nothing of its pack is stored.
			r2.NewSet("other")
			bad := r2.NewSet("count").Operations[0].GetSet().Value
			bad.Type, bad.Value = api.ValueType_VALUE_TYPE_STRING, []byte("five")
			_, err = r2.PushPull(ctx)
			wantCode(t, err, connect.CodeInvalidArgument, "ErrSchemaValidationFailed")
			r.NewSet("count")
			_, err = r.PushPull(ctx)
			require.NoError(t, err)

			fresh := wire.NewReplica(t, yc)
			_, err = attachWithSchema(t, fresh, docKey, "")
			require.NoError(t, err)
			keys := []string{}
			for _, ch := range fresh.Pulled {
				for _, op := range ch.Operations {
					keys = append(keys, op.GetSet().GetKey())
				}
			}
			assert.Equal(t, []string{"count"}, keys, "only the change that keeps the rules is stored")
		})

		t.Run("UpdateDocument", func(t *testing.T) {
			yc := servertest.Client(t, srv, servertest.ConnectJSON)
			update := func(key, root, schemaKey string) (*api.DocumentSummary, error) {
				res, err := c.UpdateDocument(ctx, withKey(&api.UpdateDocumentRequest{DocumentKey: key, Root: root, SchemaKey: schemaKey}, secret))
				if err != nil {
					return nil, err
				}
				return res.Msg.Document, nil
			}
			current := func(key string) *api.DocumentSummary {
				res, err := c.GetDocument(ctx, withKey(&api.GetDocumentRequest{DocumentKey: key}, secret))
				require.NoError(t, err)
				return res.Msg.Document
			}
			docKey := wire.UniqueKey(t, "upd")
			r := wire.NewReplica(t, yc)
			_, err := attachWithSchema(t, r, docKey, "")
			require.NoError(t, err)

			// Changing the schema while a client is attached is refused.
			_, err = update(docKey, "", "note@1")
			wantCode(t, err, connect.CodeFailedPrecondition, "ErrDocumentAttached")
			// A root update reaches the attached client.
			sum, err := update(docKey, `{"count":Int(5),"tags":["a",Long(2)]}`, "")
			require.NoError(t, err)
			assert.JSONEq(t, `{"count":5,"tags":["a",2]}`, sum.Root)
			_, err = r.PushPull(ctx)
			require.NoError(t, err)
			keys := []string{}
			for _, ch := range r.Pulled {
				for _, op := range ch.Operations {
					if set := op.GetSet(); set != nil {
						keys = append(keys, set.GetKey())
					}
				}
			}
			assert.ElementsMatch(t, []string{"count", "tags"}, keys, "the attached client pulled the update")
			_, err = r.Detach(ctx)
			require.NoError(t, err)

			// Bad input, each changing nothing.
			_, err = update(docKey, `{"count":Int(5)`, "")
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
			_, err = update(docKey, "", "note")
			wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidSchemaKey")
			_, err = update(docKey, "", "nothing@1")
			wantCode(t, err, connect.CodeNotFound, "ErrSchemaNotFound")
			_, err = update("no-such-doc", `{}`, "")
			wantCode(t, err, connect.CodeNotFound, "ErrDocumentNotFound")
			// A schema the root breaks, alone or with a root that breaks it.
			_, err = update(docKey, `{"count":"five"}`, "note@1")
			wantCode(t, err, connect.CodeInvalidArgument, "ErrSchemaValidationFailed")
			assert.JSONEq(t, `{"count":5,"tags":["a",2]}`, current(docKey).Root)
			assert.Empty(t, current(docKey).SchemaKey)

			// The schema alone, then a root it refuses, then detaching it.
			sum, err = update(docKey, "", "note@1")
			require.NoError(t, err)
			assert.Equal(t, "note@1", sum.SchemaKey)
			assert.Equal(t, "note@1", current(docKey).SchemaKey)
			_, err = update(docKey, `{"count":"x"}`, "")
			wantCode(t, err, connect.CodeInvalidArgument, "ErrSchemaValidationFailed")
			assert.JSONEq(t, `{"count":5,"tags":["a",2]}`, current(docKey).Root)
			sum, err = update(docKey, `{"count":Int(6)}`, "")
			require.NoError(t, err)
			assert.JSONEq(t, `{"count":6,"tags":["a",2]}`, sum.Root)
			sum, err = update(docKey, "", "")
			require.NoError(t, err)
			assert.Empty(t, sum.SchemaKey)
			sum, err = update(docKey, `{"count":"free again"}`, "")
			require.NoError(t, err)
			assert.JSONEq(t, `{"count":"free again","tags":["a",2]}`, sum.Root)
		})
	})
}

func removeSchema(t *testing.T, c interface {
	RemoveSchema(ctx context.Context, req *connect.Request[api.RemoveSchemaRequest]) (*connect.Response[api.RemoveSchemaResponse], error)
}, secret, name string, version int32) error {
	_, err := c.RemoveSchema(ctxOf(t), withKey(&api.RemoveSchemaRequest{SchemaName: name, Version: version}, secret))
	return err
}
