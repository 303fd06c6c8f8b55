package migrate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/migrate"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// expected is the part of the data set's expected.json these tests read.
type expected struct {
	Projects []struct {
		Name      string `json:"name"`
		ID        string `json:"id"`
		PublicKey string `json:"public_key"`
		SecretKey string `json:"secret_key"`
	} `json:"projects"`
	Schemas []struct {
		Project string `json:"project"`
		Name    string `json:"name"`
		Version int    `json:"version"`
		Body    string `json:"body"`
		ID      string `json:"id"`
		Rules   []struct {
			Path string `json:"path"`
			Type string `json:"type"`
		} `json:"rules"`
	} `json:"schemas"`
	Documents []struct {
		Schema        *string `json:"schema"`
		Project       string  `json:"project"`
		Key           string  `json:"key"`
		ID            string  `json:"id"`
		Removed       bool    `json:"removed"`
		ChangesPushed int64   `json:"changes_pushed"`
		ChangesStored int64   `json:"changes_stored"`
	} `json:"documents"`
	Revisions []struct {
		ID          string `json:"id"`
		Project     string `json:"project"`
		DocKey      string `json:"doc_key"`
		Label       string `json:"label"`
		Description string `json:"description"`
	} `json:"revisions"`
	AttachedClients []struct {
		ClientID   string `json:"client_id"`
		DocID      string `json:"doc_id"`
		Checkpoint struct {
			ServerSeq json.Number `json:"server_seq"`
			ClientSeq uint32      `json:"client_seq"`
		} `json:"checkpoint"`
	} `json:"attached_clients"`
}

func readExpected(t *testing.T, dir string) *expected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	require.NoError(t, err)
	var e expected
	require.NoError(t, json.Unmarshal(data, &e))
	return &e
}

// env is a source database loaded with the upstream data set and a fresh
// target database, on one MongoDB-wire server.
type env struct {
	ctx    context.Context
	m      *testenv.Mongo
	src    string
	srcDB  *mongodrv.Database
	target *mongo.DB
	want   *expected
}

// newEnv loads the upstream data set into a source database and dials a
// fresh target database of the same server.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	dir := testenv.UpstreamDataDir(t)
	m := testenv.MongoURI(t)
	e := &env{ctx: ctx, m: m, src: m.NewDatabase(), want: readExpected(t, dir)}
	dst := m.NewDatabase()
	m.DropWhenDone(t, e.src)
	m.DropWhenDone(t, dst)
	testenv.LoadUpstreamData(t, m.URI, e.src, dir)
	target, err := mongo.Dial(ctx, mongo.Config{URI: m.URI, Database: dst})
	require.NoError(t, err)
	t.Cleanup(func() { _ = target.Close(context.Background()) })
	e.target = target
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	e.srcDB = c.Database(e.src)
	return e
}

// open returns an importer of the source database name into the target.
func (e *env) open(t *testing.T, name string) (*migrate.Importer, error) {
	t.Helper()
	im, err := migrate.Open(e.ctx, migrate.Config{SourceURI: e.m.URI, SourceDatabase: name, Target: e.target})
	if err == nil {
		t.Cleanup(func() { _ = im.Close(context.Background()) })
	}
	return im, err
}

// setup is newEnv with an importer of the data set.
func setup(t *testing.T) (*migrate.Importer, *mongo.DB, *expected, context.Context) {
	t.Helper()
	e := newEnv(t)
	im, err := e.open(t, e.src)
	require.NoError(t, err)
	return im, e.target, e.want, e.ctx
}

func TestImportUpstreamDataSet(t *testing.T) {
	im, target, want, ctx := setup(t)

	rep, err := im.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, len(want.Documents), rep.Documents)
	require.Zero(t, rep.DocumentsUnchanged)

	projectID := map[string]string{}
	for _, p := range want.Projects {
		projectID[p.Name] = p.ID
		got, err := target.FindProjectByPublicKey(ctx, p.PublicKey)
		require.NoError(t, err, p.Name)
		require.Equal(t, p.ID, got.ID)
		require.Equal(t, p.SecretKey, got.SecretKey)
	}
	var stored int64
	for _, d := range want.Documents {
		info, err := target.FindDocument(ctx, projectID[d.Project], d.ID)
		require.NoError(t, err, d.Key)
		require.Equal(t, d.ChangesPushed, info.ServerSeq, d.Key)
		require.Equal(t, d.Removed, !info.RemovedAt.IsZero(), d.Key)
		byKey, err := target.FindDocumentByKey(ctx, projectID[d.Project], d.Key)
		require.NoError(t, err, d.Key)
		require.Equal(t, d.ID, byKey.ID)
		if d.Schema != nil {
			require.Equal(t, *d.Schema, info.Schema, d.Key)
		}
		stored += d.ChangesStored
	}
	require.Equal(t, stored, rep.ChangesCopied)
	for _, c := range want.AttachedClients {
		a, err := target.FindAttachment(ctx, c.ClientID, c.DocID)
		require.NoError(t, err)
		require.Equal(t, database.Attached, a.Status)
		require.Equal(t, c.Checkpoint.ServerSeq.String(), json.Number(itoa(a.ServerSeq)).String())
		require.Equal(t, c.Checkpoint.ClientSeq, a.ClientSeq)
		require.NotEmpty(t, a.VersionVector)
	}

	require.NotEmpty(t, want.Schemas)
	for _, s := range want.Schemas {
		got, err := target.FindSchema(ctx, projectID[s.Project], s.Name, s.Version)
		require.NoError(t, err, s.Name)
		require.Equal(t, s.ID, got.ID)
		require.Equal(t, s.Body, got.Body)
		require.Len(t, got.Rules, len(s.Rules))
		for i, r := range s.Rules {
			require.Equal(t, r.Path, got.Rules[i].Path)
			require.Equal(t, r.Type, got.Rules[i].Type)
		}
	}

	require.NotEmpty(t, want.Revisions)
	docOf := map[string]string{}
	for _, d := range want.Documents {
		docOf[d.Project+"/"+d.Key] = d.ID
	}
	for _, rv := range want.Revisions {
		got, err := target.FindRevision(ctx, projectID[rv.Project], docOf[rv.Project+"/"+rv.DocKey], rv.ID)
		require.NoError(t, err, rv.Label)
		require.Equal(t, rv.Label, got.Label)
		require.Equal(t, rv.Description, got.Description)
		require.NotEmpty(t, got.Snapshot)
		require.NotEmpty(t, got.Content)
		require.Positive(t, got.ServerSeq, rv.Label)
	}

	// A second run over the same source writes nothing.
	again, err := im.Run(ctx)
	require.NoError(t, err)
	require.Empty(t, again.Written)
	require.Equal(t, len(want.Documents), again.DocumentsUnchanged)

	v, err := im.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, v.Differences)
	require.Equal(t, len(want.Documents), v.Documents)
	require.Positive(t, v.Compared)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
