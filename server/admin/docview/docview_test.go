package docview_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin/docview"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// get reads the view of key with the authorization header auth ("" sends
// none) and returns the status and body.
func get(t *testing.T, srv *server.Server, key, query, auth string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "http://" + srv.ProfilingAddr() + docview.DocumentsPath + key
	if query != "" {
		url += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, body
}

// refusedWith checks a refusal's status and code.
func refusedWith(t *testing.T, status int, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	var b struct{ Error, Code string }
	require.NoError(t, json.Unmarshal(body, &b), string(body))
	require.Equal(t, wantStatus, status, string(body))
	require.Equal(t, wantCode, b.Code, string(body))
}

// TestDocumentView: the view is the owner's state, needs credentials, and
// never rebuilds the document.
func TestDocumentView(t *testing.T) {
	db := memory.New()
	srv := servertest.Start(t, func(c *server.Config) { c.DB = db; c.ProfilingPort = 0 })
	ctx := wire.Context(t)
	ac := v1connect.NewAdminServiceClient(http.DefaultClient, servertest.BaseURL(srv))
	in, err := ac.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	require.NoError(t, err)
	token := "Bearer " + in.Msg.Token
	preq := connect.NewRequest(&api.GetProjectRequest{Name: "default"})
	preq.Header().Set("Authorization", token)
	p, err := ac.GetProject(ctx, preq)
	require.NoError(t, err)

	r := wire.NewReplica(t, servertest.Client(t, srv, servertest.ConnectJSON))
	r.MustAttach("doc-v")
	r.Edit(5)
	r.MustPushPull()
	built := srv.Backend().Metrics().DocumentsBuilt.Load()

	for _, auth := range []string{token, "API-Key " + p.Msg.Project.SecretKey} {
		status, body := get(t, srv, "doc-v", "", auth)
		require.Equal(t, http.StatusOK, status, string(body))
		var v docview.DocumentView
		require.NoError(t, json.Unmarshal(body, &v))
		require.Equal(t, "doc-v", v.Key)
		require.Equal(t, r.DocID, v.ID)
		require.Equal(t, database.DefaultProjectID, v.ProjectID)
		require.Positive(t, v.ServerSeq)
		require.Positive(t, v.Size.Live.Data)
		var root map[string]any
		require.NoError(t, json.Unmarshal(v.Root, &root))
		require.Contains(t, root, r.SetKey(r.LastSeq))
	}
	status, _ := get(t, srv, "doc-v", "project=default", token)
	require.Equal(t, http.StatusOK, status)
	status, _ = get(t, srv, "doc-v", "project="+database.DefaultProjectID, token)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, built, srv.Backend().Metrics().DocumentsBuilt.Load(), "views rebuilt the document")

	// Bad requests: each refused.
	status, body := get(t, srv, "doc-v", "", "")
	refusedWith(t, status, body, http.StatusUnauthorized, "unauthenticated")
	status, body = get(t, srv, "doc-v", "", "Bearer forged")
	refusedWith(t, status, body, http.StatusUnauthorized, "unauthenticated")
	status, body = get(t, srv, "doc-v", "", "API-Key forged")
	refusedWith(t, status, body, http.StatusUnauthorized, "unauthenticated")
	status, body = get(t, srv, "missing", "", token)
	refusedWith(t, status, body, http.StatusNotFound, "document_not_found")
	status, body = get(t, srv, "bad%20key", "", token)
	refusedWith(t, status, body, http.StatusBadRequest, "invalid_key")
	status, body = get(t, srv, "doc-v", "project=nope", token)
	refusedWith(t, status, body, http.StatusNotFound, "project_not_found")

	// Another user sees neither the default project nor its documents.
	_, err = ac.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "mallory", Password: "s3cret-pw!"}))
	require.NoError(t, err)
	in, err = ac.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "mallory", Password: "s3cret-pw!"}))
	require.NoError(t, err)
	status, body = get(t, srv, "doc-v", "", "Bearer "+in.Msg.Token)
	refusedWith(t, status, body, http.StatusNotFound, "project_not_found")
	status, body = get(t, srv, "doc-v", "project="+database.DefaultProjectID, "Bearer "+in.Msg.Token)
	refusedWith(t, status, body, http.StatusNotFound, "project_not_found")
}
