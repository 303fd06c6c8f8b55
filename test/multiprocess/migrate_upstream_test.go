package multiprocess_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
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
