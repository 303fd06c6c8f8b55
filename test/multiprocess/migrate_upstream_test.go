package multiprocess_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// recordedClient is a client the data set's workload left attached, with
// the checkpoint and clocks its SDK had.
type recordedClient struct {
	Project    string `json:"project"`
	APIKey     string `json:"api_key"`
	ClientKey  string `json:"client_key"`
	ClientID   string `json:"client_id"`
	DocKey     string `json:"doc_key"`
	DocID      string `json:"doc_id"`
	Lamport    string `json:"lamport"`
	Checkpoint struct {
		ServerSeq string `json:"server_seq"`
		ClientSeq uint32 `json:"client_seq"`
	} `json:"checkpoint"`
}

// migrateArgs are the flags of "yorkie migrate upstream" from src to dst.
func migrateArgs(uri, src, dst string, more ...string) []string {
	return append([]string{"migrate", "upstream",
		"--from-mongo-connection-uri", uri, "--from-mongo-yorkie-database", src,
		"--mongo-connection-uri", uri, "--mongo-database", dst}, more...)
}

// TestMigrateUpstreamDataSet imports the database upstream Yorkie 0.7.17
// wrote (shared/upstream-data) with the yorkie binary, checks --verify and
// that a second run writes nothing, then serves it: the clients upstream
// left attached go on from their checkpoints, and the real JS SDK reads
// every document as expected.json says, with the projects' keys and the
// admin's upstream password.
func TestMigrateUpstreamDataSet(t *testing.T) {
	dir := testenv.UpstreamDataDir(t)
	m := testenv.MongoURI(t)
	src, dst := m.NewDatabase(), m.NewDatabase()
	m.DropWhenDone(t, src)
	m.DropWhenDone(t, dst)
	testenv.LoadUpstreamData(t, m.URI, src, dir)
	invites := addUpstreamInvites(t, m.URI, src)

	out, errOut, code := runCLI(t, migrateArgs(m.URI, src, dst)...)
	require.Equal(t, 0, code, "import: %s\n%s", out, errOut)
	require.Contains(t, out, "placeholders for unstored presence-only changes")
	require.Contains(t, errOut, "documents 6/6", "progress is shown")

	out, errOut, code = runCLI(t, migrateArgs(m.URI, src, dst, "--verify")...)
	require.Equal(t, 0, code, "verify: %s\n%s", out, errOut)
	require.Contains(t, out, ": 0 differences")

	out, errOut, code = runCLI(t, migrateArgs(m.URI, src, dst)...)
	require.Equal(t, 0, code, "second import: %s\n%s", out, errOut)
	require.Contains(t, out, "written in all: 0\n", "a second run over the same source writes nothing")

	s := StartServer(t, ServerOptions{Name: "yorkie-migrated", MongoURI: m.URI, MongoDatabase: dst})
	c := s.Client(t)
	ctx := wire.Context(t)

	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	require.NoError(t, err)
	var want struct {
		AttachedClients []recordedClient `json:"attached_clients"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NotEmpty(t, want.AttachedClients)

	// The recorded clients sync from their checkpoints, in order: the first
	// of each document pushes one change, the others pull exactly it.
	extra := map[string]map[string]any{}
	pushed := map[string]string{} // document -> key of the pushed change
	for _, rc := range want.AttachedClients {
		cl, err := sdksim.New(rc.ClientID)
		require.NoError(t, err)
		cl.DocKey = rc.DocKey
		cl.ServerSeq, err = strconv.ParseInt(rc.Checkpoint.ServerSeq, 10, 64)
		require.NoError(t, err)
		cl.LastSeq, cl.Acked = rc.Checkpoint.ClientSeq, rc.Checkpoint.ClientSeq
		cl.Lamport, err = strconv.ParseInt(rc.Lamport, 10, 64)
		require.NoError(t, err)
		// The schema document's clients only pull: a new root key would
		// break its schema.
		first := pushed[rc.DocKey] == "" && !strings.Contains(rc.DocKey, "schema")
		if first {
			key := "after-migration-" + rc.ClientKey
			cl.NewSet(key)
			pushed[rc.DocKey] = key
			extra[rc.DocKey] = map[string]any{key: rc.Checkpoint.ClientSeq + 1}
		}
		req := connect.NewRequest(&api.PushPullChangesRequest{ClientId: rc.ClientID, DocumentId: rc.DocID, ChangePack: cl.Pack()})
		req.Header().Set("x-api-key", rc.APIKey)
		resp, err := c.PushPullChanges(ctx, req)
		require.NoError(t, err, "client %s on %s", rc.ClientKey, rc.DocKey)
		pulled, err := cl.Absorb(resp.Msg.GetChangePack())
		require.NoError(t, err)
		require.Empty(t, cl.Pending, "client %s: its change is acknowledged", rc.ClientKey)
		switch {
		case first:
			require.Empty(t, pulled, "client %s: nothing new to pull after its checkpoint", rc.ClientKey)
			require.Equal(t, rc.Checkpoint.ClientSeq+1, resp.Msg.GetChangePack().GetCheckpoint().GetClientSeq())
		case pushed[rc.DocKey] != "":
			require.Len(t, pulled, 1, "client %s pulls the one change made since its checkpoint", rc.ClientKey)
			require.Equal(t, pushed[rc.DocKey], pulled[0].GetOperations()[0].GetSet().GetKey())
		default:
			require.Empty(t, pulled, "client %s: nothing new to pull after its checkpoint", rc.ClientKey)
		}
	}

	// The invites upstream handed out are accepted here, with their roles.
	admin := v1connect.NewAdminServiceClient(http.DefaultClient, s.URL())
	_, err = admin.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "invited", Password: "invited-pw1!"}))
	require.NoError(t, err)
	login, err := admin.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "invited", Password: "invited-pw1!"}))
	require.NoError(t, err)
	for _, inv := range invites {
		req := connect.NewRequest(&api.AcceptInviteRequest{Token: inv.token})
		req.Header().Set("Authorization", "Bearer "+login.Msg.Token)
		resp, err := admin.AcceptInvite(ctx, req)
		require.NoError(t, err, "the upstream invite %s is accepted", inv.token)
		require.Equal(t, inv.projectID, resp.Msg.GetMember().GetProjectId())
		require.Equal(t, inv.role, resp.Msg.GetMember().GetRole())
	}
	req := connect.NewRequest(&api.AcceptInviteRequest{Token: "never-handed-out"})
	req.Header().Set("Authorization", "Bearer "+login.Msg.Token)
	_, err = admin.AcceptInvite(ctx, req)
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "an unknown token is refused: %v", err)

	extraJSON, err := json.Marshal(extra)
	require.NoError(t, err)
	root, err := repoRoot()
	require.NoError(t, err)
	node := exec.CommandContext(ctx, "node", "--test", "--test-force-exit", "migrate/upstream-data.test.js")
	node.Dir = filepath.Join(root, "test", "e2e")
	node.Env = append(os.Environ(),
		"YORKIE_MIGRATE_RPC_ADDR="+s.URL(),
		"YORKIE_MIGRATE_EXPECTED="+filepath.Join(dir, "expected.json"),
		"YORKIE_MIGRATE_EXTRA="+string(extraJSON))
	nodeOut, err := node.CombinedOutput()
	require.NoError(t, err, "JS SDK checks:\n%s", nodeOut)
	require.Contains(t, string(nodeOut), "# fail 0")
	require.Contains(t, string(nodeOut), "# pass 3")
	require.Contains(t, string(nodeOut), "# skipped 0")

	// Once the server has served the import, running it again (a late
	// catch-up over the unchanged source) changes nothing here either.
	out, errOut, code = runCLI(t, migrateArgs(m.URI, src, dst)...)
	require.Equal(t, 0, code, "third import: %s\n%s", out, errOut)
	require.Contains(t, out, "written in all: 0\n")
}

// upstreamInvite is an invite written into the source as upstream writes
// one.
type upstreamInvite struct {
	token, projectID, role string
}

// addUpstreamInvites adds pending invites to the data set's source as
// upstream 0.7.17 stores them (the token itself; expires_at only when the
// invite expires): one expiring in a week, one without expiry.
func addUpstreamInvites(t *testing.T, uri, src string) []upstreamInvite {
	t.Helper()
	ctx := wire.Context(t)
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
	require.NoError(t, err)
	defer func() { _ = c.Disconnect(context.Background()) }()
	db := c.Database(src)
	var project, owner struct {
		ID primitive.ObjectID `bson:"_id"`
	}
	require.NoError(t, db.Collection("projects").FindOne(ctx, bson.D{{Key: "name", Value: "upstream-a-beta"}}).Decode(&project))
	require.NoError(t, db.Collection("users").FindOne(ctx, bson.D{{Key: "username", Value: "admin"}}).Decode(&owner))
	now := time.Now().UTC().Truncate(time.Millisecond)
	out := []upstreamInvite{
		{token: "upstream-invite-beta-member", projectID: project.ID.Hex(), role: "member"},
		{token: "upstream-invite-default-admin", projectID: primitive.NilObjectID.Hex(), role: "admin"},
	}
	for i, inv := range out {
		pid, err := primitive.ObjectIDFromHex(inv.projectID)
		require.NoError(t, err)
		row := bson.D{
			{Key: "project_id", Value: pid}, {Key: "token", Value: inv.token}, {Key: "role", Value: inv.role},
			{Key: "created_by", Value: owner.ID}, {Key: "created_at", Value: now},
		}
		if i == 0 {
			row = append(row, bson.E{Key: "expires_at", Value: now.Add(7 * 24 * time.Hour)})
		}
		_, err = db.Collection("invites").InsertOne(ctx, row)
		require.NoError(t, err)
	}
	return out
}
