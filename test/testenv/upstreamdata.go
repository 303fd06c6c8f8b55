package testenv

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// UpstreamDataDir returns the directory of the upstream Yorkie data set
// (shared/upstream-data: an export of a database upstream 0.7.17 wrote, and
// expected.json). It is looked up as shared/upstream-data beside the
// repository (../shared from its root, as CI places it) or beside one of
// the directories above it. A missing data set fails the test: the tests
// that use it prove the import of real upstream data.
func UpstreamDataDir(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("upstream data set: %v", err)
	}
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		cand := filepath.Join(dir, "shared", "upstream-data")
		if _, err := os.Stat(filepath.Join(cand, "expected.json")); err == nil {
			return cand
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	t.Fatalf("upstream data set not found: want shared/upstream-data with expected.json at %s or above it",
		filepath.Join(filepath.Dir(root), "shared"))
	return ""
}

// LoadUpstreamData loads every COLLECTION.jsonl of dir into the database
// name of the server at uri, as the data set's README says: one collection
// per file (created even when empty), each line canonical Extended JSON.
func LoadUpstreamData(t testing.TB, uri, name, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("load upstream data: %v", err)
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	db := c.Database(name)
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("load upstream data: no .jsonl files in %s (%v)", dir, err)
	}
	for _, f := range files {
		col := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		if err := db.CreateCollection(ctx, col); err != nil {
			t.Fatalf("load upstream data: create %s: %v", col, err)
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatalf("load upstream data: %v", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var docs []any
		for sc.Scan() {
			if len(strings.TrimSpace(sc.Text())) == 0 {
				continue
			}
			var d bson.D
			if err := bson.UnmarshalExtJSON(sc.Bytes(), true, &d); err != nil {
				t.Fatalf("load upstream data: %s line %d: %v", f, len(docs)+1, err)
			}
			docs = append(docs, d)
		}
		_ = fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("load upstream data: read %s: %v", f, err)
		}
		for i := 0; i < len(docs); i += 200 {
			if _, err := db.Collection(col).InsertMany(ctx, docs[i:min(i+200, len(docs))]); err != nil {
				t.Fatalf("load upstream data: insert into %s: %v", col, err)
			}
		}
	}
}
