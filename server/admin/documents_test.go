package admin_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// byKey wraps a message in a request carrying a project's secret key, as
// upstream's dashboard sends it.
func byKey[T any](msg *T, secret string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "API-Key "+secret)
	return req
}

// projects returns the secret key of the default project and of a project
// of another user.
func projects(t *testing.T, c v1connect.AdminServiceClient) (def, other string) {
	t.Helper()
	ctx := ctxOf(t)
	token := login(t, c, "admin", "admin")
	p, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "default"}, token))
	require.NoError(t, err)
	_, err = c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "eve", Password: "s3cret-pw!"}))
	require.NoError(t, err)
	created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "eves"}, login(t, c, "eve", "s3cret-pw!")))
	require.NoError(t, err)
	return p.Msg.Project.SecretKey, created.Msg.Project.SecretKey
}

// rootOf decodes a document summary's root.
func rootOf(t *testing.T, root string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(root), &m), root)
	return m
}

// TestAdminDocuments writes a document through the YorkieService and reads
// it back through every document call, with their bad inputs.
func TestAdminDocuments(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		srv := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		secret, eves := projects(t, c)

		// A client writes three changes and a presence.
		r := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectProto))
		_, err := r.AttachWith(ctx, "doc-a", map[string]string{"name": `"ann"`})
		require.NoError(t, err)
		r.Edit(3)
		r.MustPushPull()

		got, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-a"}, secret))
		require.NoError(t, err)
		doc := got.Msg.Document
		require.Equal(t, r.DocID, doc.Id)
		require.Equal(t, "doc-a", doc.Key)
		require.EqualValues(t, 1, doc.AttachedClients)
		root := rootOf(t, doc.Root)
		for seq := r.LastSeq - 2; seq <= r.LastSeq; seq++ {
			require.Contains(t, root, r.SetKey(seq))
		}
		require.Positive(t, doc.DocumentSize.GetLive().GetData())
		require.Equal(t, `"ann"`, doc.Presences[r.ID].GetData()["name"])
		require.NotNil(t, doc.CreatedAt)
		require.NotNil(t, doc.AccessedAt, "the dashboard reads every timestamp")
		require.NotNil(t, doc.UpdatedAt)

		// Created documents are empty; their keys cannot be created twice.
		for _, k := range []string{"doc-b", "doc-c", "other"} {
			res, err := c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: k}, secret))
			require.NoError(t, err)
			require.Equal(t, "{}", res.Msg.Document.Root)
		}
		_, err = c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: "doc-a"}, secret))
		wantCode(t, err, connect.CodeAlreadyExists, "ErrDocumentAlreadyExists")

		// Pages: newest first by default, both ways after an ID.
		all, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PageSize: 10, IncludeRoot: true}, secret))
		require.NoError(t, err)
		require.Len(t, all.Msg.Documents, 4)
		ids := make([]string, 4)
		for i, d := range all.Msg.Documents {
			ids[i] = d.Id
			if i > 0 {
				require.Greater(t, ids[i-1], d.Id)
			}
			if d.Key == "doc-a" {
				require.Equal(t, doc.Root[:admin.RootMaxLen]+"...", d.Root, "roots are cut")
				require.EqualValues(t, 1, d.AttachedClients)
			}
		}
		page, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PreviousId: ids[1], PageSize: 2}, secret))
		require.NoError(t, err)
		require.Equal(t, []string{ids[2], ids[3]}, summaryIDs(page.Msg.Documents))
		require.Empty(t, page.Msg.Documents[0].Root, "no root unless asked")
		page, err = c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PreviousId: ids[3], PageSize: 2, IsForward: true}, secret))
		require.NoError(t, err)
		require.Equal(t, []string{ids[2], ids[1]}, summaryIDs(page.Msg.Documents))

		many, err := c.GetDocuments(ctx, byKey(&api.GetDocumentsRequest{DocumentKeys: []string{"doc-c", "missing", "doc-a"}, IncludeRoot: true, IncludePresences: true}, secret))
		require.NoError(t, err)
		require.Len(t, many.Msg.Documents, 2)
		require.Equal(t, "doc-c", many.Msg.Documents[0].Key)
		require.Equal(t, doc.Root, many.Msg.Documents[1].Root)
		require.Len(t, many.Msg.Documents[1].Presences, 1)

		found, err := c.SearchDocuments(ctx, byKey(&api.SearchDocumentsRequest{Query: "doc-", PageSize: 2}, secret))
		require.NoError(t, err)
		require.EqualValues(t, 3, found.Msg.TotalCount)
		require.NotNil(t, found.Msg.Documents[0].UpdatedAt)
		require.Equal(t, []string{"doc-a", "doc-b"}, summaryKeys(found.Msg.Documents))

		// History: every stored change, in pages, and the state at each.
		changes, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "doc-a"}, secret))
		require.NoError(t, err)
		head := int64(len(changes.Msg.Changes))
		require.GreaterOrEqual(t, head, int64(3))
		for i, ch := range changes.Msg.Changes {
			require.EqualValues(t, i+1, ch.Id.ServerSeq)
		}
		last, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "doc-a", PageSize: 2}, secret))
		require.NoError(t, err)
		require.Equal(t, []int64{head - 1, head}, changeSeqs(last.Msg.Changes))
		before, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "doc-a", PageSize: 2, PreviousSeq: head - 1}, secret))
		require.NoError(t, err)
		require.Equal(t, []int64{head - 3, head - 2}, changeSeqs(before.Msg.Changes))
		first, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "doc-a", PageSize: 1, IsForward: true, PreviousSeq: 1}, secret))
		require.NoError(t, err)
		require.Equal(t, []int64{2}, changeSeqs(first.Msg.Changes))

		meta, err := c.GetSnapshotMeta(ctx, byKey(&api.GetSnapshotMetaRequest{DocumentKey: "doc-a", ServerSeq: head}, secret))
		require.NoError(t, err)
		at, err := document.FromSnapshot(meta.Msg.Snapshot)
		require.NoError(t, err)
		require.JSONEq(t, doc.Root, at.JSON())
		require.Positive(t, meta.Msg.Lamport)
		require.NotEmpty(t, meta.Msg.VersionVector.GetVector())
		meta, err = c.GetSnapshotMeta(ctx, byKey(&api.GetSnapshotMetaRequest{DocumentKey: "doc-a", ServerSeq: head - 1}, secret))
		require.NoError(t, err)
		at, err = document.FromSnapshot(meta.Msg.Snapshot)
		require.NoError(t, err)
		require.NotContains(t, rootOf(t, at.JSON()), r.SetKey(r.LastSeq), "the state before the last change")

		// Bad inputs: each refused, nothing changed.
		bad := []struct {
			name string
			call func() error
			code connect.Code
			info string
		}{
			{"no credentials", func() error {
				_, err := c.GetDocument(ctx, connect.NewRequest(&api.GetDocumentRequest{DocumentKey: "doc-a"}))
				return err
			}, connect.CodeUnauthenticated, "ErrUnauthenticated"},
			{"an admin token instead of a secret key", func() error {
				_, err := c.ListDocuments(ctx, authed(&api.ListDocumentsRequest{}, login(t, c, "admin", "admin")))
				return err
			}, connect.CodeUnauthenticated, "ErrUnauthenticated"},
			{"a forged secret key", func() error {
				_, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-a"}, "forged"))
				return err
			}, connect.CodeUnauthenticated, "ErrUnauthenticated"},
			{"another user's project", func() error {
				_, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-a"}, eves))
				return err
			}, connect.CodeNotFound, "ErrDocumentNotFound"},
			{"removal in another user's project", func() error {
				_, err := c.RemoveDocumentByAdmin(ctx, byKey(&api.RemoveDocumentByAdminRequest{DocumentKey: "doc-a", Force: true}, eves))
				return err
			}, connect.CodeNotFound, "ErrDocumentNotFound"},
			{"an unknown key", func() error {
				_, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "missing"}, secret))
				return err
			}, connect.CodeNotFound, "ErrDocumentNotFound"},
			{"a malformed key", func() error {
				_, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "a/b"}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a negative page size", func() error {
				_, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PageSize: -1}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a page size over the bound", func() error {
				_, err := c.SearchDocuments(ctx, byKey(&api.SearchDocumentsRequest{PageSize: 102}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a change page over the bound", func() error {
				_, err := c.ListChanges(ctx, byKey(&api.ListChangesRequest{DocumentKey: "doc-a", PageSize: 1001}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a malformed previous_id", func() error {
				_, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PreviousId: "zz"}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a server_seq past the head", func() error {
				_, err := c.GetSnapshotMeta(ctx, byKey(&api.GetSnapshotMetaRequest{DocumentKey: "doc-a", ServerSeq: head + 1}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"too many keys", func() error {
				keys := make([]string, 101)
				for i := range keys {
					keys[i] = fmt.Sprint("k", i)
				}
				_, err := c.GetDocuments(ctx, byKey(&api.GetDocumentsRequest{DocumentKeys: keys}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a malformed initial root", func() error {
				_, err := c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: "doc-new", InitialRoot: `{"a":1`}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"an initial root that is no object", func() error {
				_, err := c.CreateDocument(ctx, byKey(&api.CreateDocumentRequest{DocumentKey: "doc-new", InitialRoot: `[1]`}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"removing an attached document", func() error {
				_, err := c.RemoveDocumentByAdmin(ctx, byKey(&api.RemoveDocumentByAdminRequest{DocumentKey: "doc-a"}, secret))
				return err
			}, connect.CodeFailedPrecondition, "ErrDocumentAttached"},
		}
		for _, b := range bad {
			wantCode(t, b.call(), b.code, b.info)
		}
		again, err := c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-a"}, secret))
		require.NoError(t, err)
		require.Equal(t, doc.Root, again.Msg.Document.Root)
		list, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{}, secret))
		require.NoError(t, err)
		require.Len(t, list.Msg.Documents, 4, "page size 0 is the bound")
		_, err = c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-new"}, secret))
		wantCode(t, err, connect.CodeNotFound, "ErrDocumentNotFound")
		eveList, err := c.ListDocuments(ctx, byKey(&api.ListDocumentsRequest{PageSize: 10}, eves))
		require.NoError(t, err)
		require.Empty(t, eveList.Msg.Documents)

		// Forced, the removal reaches the attached client.
		_, err = c.RemoveDocumentByAdmin(ctx, byKey(&api.RemoveDocumentByAdminRequest{DocumentKey: "doc-a", Force: true}, secret))
		require.NoError(t, err)
		_, err = c.GetDocument(ctx, byKey(&api.GetDocumentRequest{DocumentKey: "doc-a"}, secret))
		wantCode(t, err, connect.CodeNotFound, "ErrDocumentNotFound")
		pack, err := r.PushPull(ctx)
		require.NoError(t, err)
		require.True(t, pack.IsRemoved)
		_, err = c.RemoveDocumentByAdmin(ctx, byKey(&api.RemoveDocumentByAdminRequest{DocumentKey: "doc-b"}, secret))
		require.NoError(t, err, "nobody attached")
	})
}

func summaryIDs(ds []*api.DocumentSummary) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Id)
	}
	return out
}

func summaryKeys(ds []*api.DocumentSummary) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Key)
	}
	return out
}

func changeSeqs(cs []*api.Change) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Id.ServerSeq)
	}
	return out
}
