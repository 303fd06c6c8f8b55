package admin_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestCreateDocumentWithInitialRoot: CreateDocument's initial_root (YSON,
// as upstream) is the new document's content, which the first client to
// attach pulls; an empty object creates an empty document.
func TestCreateDocumentWithInitialRoot(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		srv := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		secret, _ := projects(t, c)

		res, err := c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{
			DocumentKey: "seeded", InitialRoot: `{"title":"hello","n":Int(3),"tags":["a","b"],"body":Text(),"hits":Counter(Int(2))}`,
		}, secret))
		require.NoError(t, err)
		require.JSONEq(t, `{"title":"hello","n":3,"tags":["a","b"],"body":[],"hits":2}`, res.Msg.Document.Root)
		got, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "seeded"}, secret))
		require.NoError(t, err)
		require.Equal(t, res.Msg.Document.Root, got.Msg.Document.Root)
		require.Equal(t, res.Msg.Document.Id, got.Msg.Document.Id)

		// The first client to attach pulls the content.
		r := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectJSON))
		_, err = r.Attach(ctx, "seeded")
		require.NoError(t, err)
		var keys []string
		for _, ch := range r.Pulled {
			for _, op := range ch.Operations {
				if set := op.GetSet(); set != nil {
					keys = append(keys, set.GetKey())
				}
			}
		}
		require.ElementsMatch(t, []string{"title", "n", "tags", "body", "hits"}, keys)

		// Created once only, with or without a root.
		_, err = c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: "seeded", InitialRoot: `{"x":1}`}, secret))
		wantCode(t, err, connect.CodeAlreadyExists, "ErrDocumentAlreadyExists")
		again, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "seeded"}, secret))
		require.NoError(t, err)
		require.Equal(t, res.Msg.Document.Root, again.Msg.Document.Root, "nothing changed")

		empty, err := c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: "empty", InitialRoot: `{}`}, secret))
		require.NoError(t, err)
		require.Equal(t, "{}", empty.Msg.Document.Root)
	})
}
