package clustertest_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestAdminUpdateDocumentAcrossNodes: UpdateDocument sent to a node that
// does not own the document is applied by the owner, in forward and
// redirect mode: a root update reaches the client attached at the owner,
// and the refusals (schema change while attached, a schema the root
// breaks, a malformed root) change nothing. CreateDocument's initial root
// sent to any node is stored by the owner.
func TestAdminUpdateDocumentAcrossNodes(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, 3, clustertest.WithMode(mode))
			ctx := wire.Context(t)
			secret := defaultSecret(t, adminOf(c.Node(0)))
			schemaName := "note" // each subtest starts its own cluster
			_, err := adminOf(c.Node(0)).CreateSchema(ctx, withSecret(&api.CreateSchemaRequest{
				SchemaName: schemaName, SchemaVersion: 1, SchemaBody: "type Document = { count: integer; };",
				Rules: []*api.Rule{{Path: "$.count", Type: "integer"}},
			}, secret))
			require.NoError(t, err)
			schemaKey := schemaName + "@1"

			key := wire.UniqueKey(t, "upd")
			writer := wire.NewReplica(t, c.Node(0).ConnectJSON())
			_, err = writer.Attach(ctx, key)
			if err != nil && retryable(err) { // redirect mode names the owner
				writer = wire.NewReplica(t, ownerOf(t, c, key).Node.ConnectJSON())
				_, err = writer.Attach(ctx, key)
			}
			require.NoError(t, err)
			owner := ownerOf(t, c, key).Node
			writer.C = owner.ConnectJSON()
			far := adminOf(otherNodes(c, owner)[0])
			update := func(root, schemaKey string) (*api.DocumentSummary, error) {
				res, err := far.UpdateDocument(ctx, withSecret(&api.UpdateDocumentRequest{DocumentKey: key, Root: root, SchemaKey: schemaKey}, secret))
				if err != nil {
					return nil, err
				}
				return res.Msg.Document, nil
			}
			current := func() *api.DocumentSummary {
				res, err := adminOf(owner).GetDocument(ctx, withSecret(&api.GetDocumentRequest{DocumentKey: key}, secret))
				require.NoError(t, err)
				return res.Msg.Document
			}

			// Attached: the schema cannot change, the root can, and the
			// client attached at the owner pulls the update.
			_, err = update("", schemaKey)
			require.Equal(t, connect.CodeFailedPrecondition, connect.CodeOf(err), "%v", err)
			require.Equal(t, "ErrDocumentAttached", wire.ErrorInfo(err)["code"])
			sum, err := update(`{"count":Int(5)}`, "")
			require.NoError(t, err)
			require.JSONEq(t, `{"count":5}`, sum.Root)
			require.Equal(t, writer.DocID, sum.Id)
			_, err = writer.PushPull(ctx)
			require.NoError(t, err)
			var keys []string
			for _, ch := range writer.Pulled {
				for _, op := range ch.Operations {
					if set := op.GetSet(); set != nil {
						keys = append(keys, set.GetKey())
					}
				}
			}
			require.Contains(t, keys, "count", "the client at the owner pulled the update")
			_, err = writer.Detach(ctx)
			require.NoError(t, err)

			// Refusals through the relay, each changing nothing.
			_, err = update(`{"count":Int(5)`, "")
			require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
			_, err = update(`{"count":"five"}`, schemaKey)
			require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
			require.Equal(t, "ErrSchemaValidationFailed", wire.ErrorInfo(err)["code"])
			_, err = update("", "nothing@1")
			require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "%v", err)
			require.Equal(t, "ErrSchemaNotFound", wire.ErrorInfo(err)["code"])
			require.JSONEq(t, `{"count":5}`, current().Root)
			require.Empty(t, current().SchemaKey)

			// Binding the schema, then a root it refuses, then one it takes.
			sum, err = update("", schemaKey)
			require.NoError(t, err)
			require.Equal(t, schemaKey, sum.SchemaKey)
			require.Equal(t, schemaKey, current().SchemaKey)
			_, err = update(`{"count":"x"}`, "")
			require.Equal(t, "ErrSchemaValidationFailed", wire.ErrorInfo(err)["code"], "%v", err)
			sum, err = update(`{"count":Int(6)}`, "")
			require.NoError(t, err)
			require.JSONEq(t, `{"count":6}`, sum.Root)
			require.JSONEq(t, `{"count":6}`, current().Root)

			// A root as large as the AdminService takes is relayed whole: the
			// node-to-node message carries it with its envelope.
			big := `{"count":Int(7),"note":"` + strings.Repeat("x", 64<<10-120) + `"}`
			sum, err = update(big, "")
			require.NoError(t, err, "a root the owner would take directly must be taken when relayed")
			require.Contains(t, sum.Root, `"count":7`)

			// CreateDocument with an initial root, sent to every node: the
			// document's owner stores the root, which a client pulls.
			for i := range 3 {
				seeded := key + "-seeded-" + string(rune('a'+i))
				res, err := adminOf(c.Node(i)).CreateDocument(ctx, withSecret(&api.CreateDocumentRequest{
					DocumentKey: seeded, InitialRoot: `{"title":"t","n":Int(1)}`,
				}, secret))
				require.NoError(t, err, "node %d", i)
				require.JSONEq(t, `{"title":"t","n":1}`, res.Msg.Document.Root)
				r := wire.NewReplica(t, ownerOf(t, c, seeded).Node.ConnectJSON())
				_, err = r.Attach(ctx, seeded)
				require.NoError(t, err)
				var set []string
				for _, ch := range r.Pulled {
					for _, op := range ch.Operations {
						if s := op.GetSet(); s != nil {
							set = append(set, s.GetKey())
						}
					}
				}
				require.ElementsMatch(t, []string{"title", "n"}, set, "node %d", i)
			}
		})
	}
}
