package multiprocess_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	mongodb "github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// importedState is what an import left in a target, in a form two targets
// compare by: projects, documents with their whole logs, the newest
// snapshot of each, and every client's attachments.
func importedState(t *testing.T, db *mongodb.DB, dataDir string) string {
	t.Helper()
	ctx := wire.Context(t)
	raw, err := os.ReadFile(filepath.Join(dataDir, "expected.json"))
	require.NoError(t, err)
	var want struct {
		Projects []struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		} `json:"projects"`
		Documents []struct {
			Project string `json:"project"`
			Key     string `json:"key"`
			ID      string `json:"id"`
		} `json:"documents"`
		Clients []struct {
			ID string `json:"id"`
		} `json:"clients"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	var b strings.Builder
	project := map[string]string{}
	for _, p := range want.Projects {
		info, err := db.FindProjectByID(ctx, p.ID)
		require.NoError(t, err)
		project[p.Name] = p.ID
		fmt.Fprintf(&b, "project %s %s %s %s %s\n", info.ID, info.Name, info.Owner, info.PublicKey, info.SecretKey)
	}
	user, err := db.FindUserByName(ctx, "admin")
	require.NoError(t, err)
	fmt.Fprintf(&b, "user %s %s\n", user.ID, user.HashedPassword)
	for _, d := range want.Documents {
		info, err := db.FindDocument(ctx, project[d.Project], d.ID)
		require.NoError(t, err, d.Key)
		byKey, err := db.FindDocumentByKey(ctx, project[d.Project], d.Key)
		require.NoError(t, err, d.Key)
		fmt.Fprintf(&b, "document %s %s head %d removed %t by key %s\n", d.ID, d.Key, info.ServerSeq, !info.RemovedAt.IsZero(), byKey.ID)
		changes, err := db.FindChanges(ctx, d.ID, 1, info.ServerSeq)
		require.NoError(t, err)
		require.Len(t, changes, int(info.ServerSeq))
		for _, c := range changes {
			body, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.Body)
			require.NoError(t, err)
			fmt.Fprintf(&b, "  %d %s %d %x\n", c.ServerSeq, c.ActorID, c.ClientSeq, body)
		}
		snap, err := db.FindSnapshot(ctx, d.ID, info.ServerSeq)
		if err == nil {
			fmt.Fprintf(&b, "  snapshot %d %d %x\n", snap.ServerSeq, snap.Lamport, snap.Data)
		} else {
			require.ErrorIs(t, err, database.ErrSnapshotNotFound)
		}
		clients, err := db.ListDocumentClients(ctx, d.ID)
		require.NoError(t, err)
		sort.Strings(clients)
		for _, c := range clients {
			a, err := db.FindAttachment(ctx, c, d.ID)
			require.NoError(t, err)
			fmt.Fprintf(&b, "  attachment %s %s %d %d %v\n", c, a.Status, a.ServerSeq, a.ClientSeq, a.VersionVector)
		}
	}
	for _, c := range want.Clients {
		found := false
		for _, p := range want.Projects {
			info, err := db.FindClient(ctx, p.ID, c.ID)
			if err == nil {
				fmt.Fprintf(&b, "client %s %s %s %s\n", info.ID, info.ProjectID, info.Key, info.Status)
				found = true
			}
		}
		require.True(t, found, "client %s", c.ID)
	}
	return b.String()
}

// TestMigrateSurvivesSIGKILL kills the import at several points (after the
// k-th progress line, printed after every document and every write of
// changes; where exactly it dies depends on the machine) and runs it
// again: the result is the one of an import never interrupted, and a run
// after it writes nothing.
func TestMigrateSurvivesSIGKILL(t *testing.T) {
	dir := testenv.UpstreamDataDir(t)
	m := testenv.MongoURI(t)
	src := m.NewDatabase()
	m.DropWhenDone(t, src)
	testenv.LoadUpstreamData(t, m.URI, src, dir)

	ref := m.NewDatabase()
	m.DropWhenDone(t, ref)
	out, errOut, code := runCLI(t, migrateArgs(m.URI, src, ref)...)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	want := importedState(t, dialDatabase(t, m.URI, ref), dir)

	for _, k := range []int{1, 2, 4, 7, 10} {
		t.Run(fmt.Sprintf("killed after progress line %d", k), func(t *testing.T) {
			dst := m.NewDatabase()
			m.DropWhenDone(t, dst)
			cmd := exec.CommandContext(wire.Context(t), yorkieBinary(t), migrateArgs(m.URI, src, dst, "--progress-interval", "1ns")...)
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stderr)
			lines := 0
			for lines < k && sc.Scan() {
				if strings.HasPrefix(sc.Text(), "documents ") {
					lines++
				}
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			for sc.Scan() {
			}
			_ = cmd.Wait()

			out, errOut, code := runCLI(t, migrateArgs(m.URI, src, dst)...)
			require.Equal(t, 0, code, "run after the kill: %s\n%s", out, errOut)
			t.Logf("the run after the kill:\n%s", out)
			require.Equal(t, want, importedState(t, dialDatabase(t, m.URI, dst), dir))
			out, errOut, code = runCLI(t, migrateArgs(m.URI, src, dst)...)
			require.Equal(t, 0, code, "%s\n%s", out, errOut)
			require.Contains(t, out, "written in all: 0\n")
		})
	}
}
