package mongo_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// quietLogger keeps the backend's info messages out of test output.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// mongoTest returns a context bounding the test by timeout, the
// MongoDB-wire server, and a handle on the test's own database of it.
func mongoTest(t *testing.T, timeout time.Duration) (context.Context, *testenv.Mongo, *mongo.DB) {
	t.Helper()
	m := testenv.MongoURI(t)
	db := dbtest.DialMongo(t, m, m.Database)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx, m, db
}

// olderDatabase makes a fresh database on m and returns the driver's own
// handle on it, for a test to store records as an older server did before
// the backend dials the database (by name).
func olderDatabase(t *testing.T) (context.Context, *testenv.Mongo, string, *mongodrv.Database) {
	t.Helper()
	m := testenv.MongoURI(t)
	name := m.NewDatabase()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, m, name, rawDatabase(t, ctx, m, name)
}

func TestConformance(t *testing.T) {
	m := testenv.MongoURI(t)
	dbtest.Run(t, func(t *testing.T) database.Database {
		return dbtest.DialMongo(t, m, m.NewDatabase())
	})
	// Two clients on one database act as two nodes.
	t.Run("TwoClients", func(t *testing.T) {
		dbtest.RunShared(t, func(t *testing.T) (database.Database, database.Database) {
			name := m.NewDatabase()
			return dbtest.DialMongo(t, m, name), dbtest.DialMongo(t, m, name)
		})
	})
}

func TestDialUnreachable(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	start := time.Now()
	_, err := mongo.Dial(context.Background(), mongo.Config{URI: "mongodb://" + addr, ConnectTimeout: time.Second, Logger: quietLogger()})
	if !errors.Is(err, database.ErrUnavailable) {
		t.Fatalf("Dial of a closed port: got %v, want ErrUnavailable", err)
	}
	t.Logf("Dial of a closed port gave up after %s (connect timeout 1s)", time.Since(start).Round(time.Millisecond))
}

// change builds one stored change for the outage test.
func change(seq int64) *database.Change {
	return &database.Change{
		ServerSeq: seq,
		ActorID:   "0123456789abcdef01234567",
		ClientSeq: uint32(seq),
		Body:      &api.Change{Id: &api.ChangeID{ServerSeq: seq, ClientSeq: uint32(seq)}, Message: fmt.Sprint("change ", seq)},
	}
}

func TestOutageAndRecovery(t *testing.T) {
	m := testenv.MongoURI(t)
	if !m.Managed() {
		testenv.Unavailable(t, "the MongoDB server is external: the outage test must start and stop its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := mongo.Dial(ctx, mongo.Config{URI: m.URI, Database: m.Database, ConnectTimeout: 2 * time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })

	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "outage")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(1), change(2)}); err != nil {
		t.Fatal(err)
	}

	m.Stop()
	calls := map[string]func(context.Context) error{
		"FindDocument": func(ctx context.Context) error {
			_, err := db.FindDocument(ctx, database.DefaultProjectID, d.ID)
			return err
		},
		"AppendChanges": func(ctx context.Context) error {
			return db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(3)})
		},
		"FindChanges": func(ctx context.Context) error { _, err := db.FindChanges(ctx, d.ID, 1, 10); return err },
		"ActivateClient": func(ctx context.Context) error {
			_, err := db.ActivateClient(ctx, database.DefaultProjectID, "during-outage", nil)
			return err
		},
	}
	for name, call := range calls {
		// With a deadline shorter than the connect timeout, the deadline wins.
		callCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		start := time.Now()
		err := call(callCtx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, database.ErrUnavailable) {
			t.Fatalf("%s while the server is down: got %v, want ErrUnavailable", name, err)
		}
		t.Logf("%s while the server is down gave up after %s (deadline 500ms)", name, took.Round(time.Millisecond))
	}
	// Without a deadline the connect timeout bounds the wait.
	start := time.Now()
	if _, err := db.FindClient(context.Background(), database.DefaultProjectID, d.ID); !errors.Is(err, database.ErrUnavailable) {
		t.Fatalf("FindClient without deadline while the server is down: got %v, want ErrUnavailable", err)
	}
	t.Logf("FindClient without deadline gave up after %s (connect timeout 2s)", time.Since(start).Round(time.Millisecond))

	m.Restart(t)
	restarted := time.Now()
	for {
		callCtx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := db.FindDocument(callCtx, database.DefaultProjectID, d.ID)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, database.ErrUnavailable) {
			t.Fatalf("FindDocument after the restart: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("the handle did not recover after the restart: %v", err)
		}
	}
	t.Logf("recovered %s after the restart", time.Since(restarted).Round(time.Millisecond))

	if err := db.AppendChanges(ctx, d.ID, 0, []*database.Change{change(3)}); err != nil {
		t.Fatalf("AppendChanges after recovery: %v", err)
	}
	log, err := db.FindChanges(ctx, d.ID, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || log[0].ServerSeq != 1 || log[2].ServerSeq != 3 {
		t.Fatalf("log after the restart has %d changes, want 1..3", len(log))
	}
}

// An owner's attachment write that passed the fence check just before a
// takeover must not overwrite what the new owner wrote after it. Writing
// without claims reproduces the interleaving deterministically.
func TestAttachmentKeepsNewerEpoch(t *testing.T) {
	ctx, _, db := mongoTest(t, 30*time.Second)
	c, err := db.ActivateClient(ctx, database.DefaultProjectID, "client", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "doc")
	if err != nil {
		t.Fatal(err)
	}
	newer := &database.Attachment{ClientID: c.ID, DocID: d.ID, Status: database.Detached, ServerSeq: 10}
	if err := db.UpdateAttachment(ctx, newer, 2); err != nil {
		t.Fatal(err)
	}
	stale := &database.Attachment{ClientID: c.ID, DocID: d.ID, Status: database.Attached, ServerSeq: 5}
	if err := db.UpdateAttachment(ctx, stale, 1); !errors.Is(err, database.ErrFenced) {
		t.Fatalf("attachment write of epoch 1 over one of epoch 2: got %v, want ErrFenced", err)
	}
	got, err := db.FindAttachment(ctx, c.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != database.Detached || got.ServerSeq != 10 {
		t.Fatalf("attachment after a stale write = %+v, want the epoch 2 record", got)
	}
	same := &database.Attachment{ClientID: c.ID, DocID: d.ID, Status: database.Attached, ServerSeq: 11}
	if err := db.UpdateAttachment(ctx, same, 2); err != nil {
		t.Fatalf("the same epoch writing again: %v", err)
	}
}

// A remover that stopped after marking the document removed but before
// releasing its key must not pin the key to the removed document.
func TestFindOrCreateAfterInterruptedRemoval(t *testing.T) {
	ctx, m, db := mongoTest(t, 30*time.Second)
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "half-removed")
	if err != nil {
		t.Fatal(err)
	}

	raw := rawDatabase(t, ctx, m, m.Database)
	id, err := primitive.ObjectIDFromHex(d.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.Collection("documents").UpdateOne(ctx,
		bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "removed_at", Value: time.Now()}}}})
	if err != nil || res.MatchedCount != 1 {
		t.Fatalf("mark the document removed behind the backend's back: %v (matched %d)", err, res.MatchedCount)
	}

	fresh, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "half-removed")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ID == d.ID || !fresh.RemovedAt.IsZero() {
		t.Fatalf("key of a half-removed document gave %+v, want a new live document", fresh)
	}
	if again, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "half-removed"); err != nil || again.ID != fresh.ID {
		t.Fatalf("the key then gave %v, %v; want %s", again, err, fresh.ID)
	}
}

// TestDialDropsUniqueClientKeys checks that a database made when client keys
// were unique (one client per key) takes a second activation of a key once
// dialled again.
func TestDialDropsUniqueClientKeys(t *testing.T) {
	ctx, m, name, old := olderDatabase(t)
	clients := old.Collection("clients")
	if _, err := clients.Indexes().CreateOne(ctx, mongodrv.IndexModel{
		Keys: bson.D{{Key: "key", Value: 1}}, Options: options.Index().SetName("key_unique").SetUnique(true),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients.InsertOne(ctx, bson.D{{Key: "_id", Value: primitive.NewObjectID()}, {Key: "key", Value: "old-key"}, {Key: "status", Value: "activated"}}); err != nil {
		t.Fatal(err)
	}

	db := dbtest.DialMongo(t, m, name)
	a, err := db.ActivateClient(ctx, database.DefaultProjectID, "old-key", nil)
	if err != nil {
		t.Fatalf("activation of a key stored under the unique index: %v", err)
	}
	b, err := db.ActivateClient(ctx, database.DefaultProjectID, "old-key", nil)
	if err != nil || b.ID == a.ID {
		t.Fatalf("second activation: %+v, %v", b, err)
	}
}

// TestDialMigratesRecordsBeforeProjects writes a client, a document and its
// key record as they were stored before projects existed (no project_id)
// and checks that, once dialled, they belong to the default project and to
// no other, and that the document's key still names it.
func TestDialMigratesRecordsBeforeProjects(t *testing.T) {
	ctx, m, name, old := olderDatabase(t)
	clientID, docID := primitive.NewObjectID(), primitive.NewObjectID()
	at := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := old.Collection("clients").InsertOne(ctx, bson.D{
		{Key: "_id", Value: clientID}, {Key: "key", Value: "old-client"}, {Key: "status", Value: "activated"},
		{Key: "created_at", Value: at}, {Key: "updated_at", Value: at},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Collection("documents").InsertOne(ctx, bson.D{
		{Key: "_id", Value: docID}, {Key: "key", Value: "old-doc"}, {Key: "created_at", Value: at}, {Key: "head_hint", Value: int64(0)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Collection("doc_keys").InsertOne(ctx, bson.D{{Key: "_id", Value: "old-doc"}, {Key: "doc_id", Value: docID}}); err != nil {
		t.Fatal(err)
	}

	db := dbtest.DialMongo(t, m, name)
	other := "0123456789abcdef01234567"
	got, err := db.FindClient(ctx, database.DefaultProjectID, clientID.Hex())
	if err != nil || got.ProjectID != database.DefaultProjectID || got.Key != "old-client" {
		t.Fatalf("old client in the default project: %+v, %v", got, err)
	}
	if _, err := db.FindClient(ctx, other, clientID.Hex()); !errors.Is(err, database.ErrClientNotFound) {
		t.Fatalf("old client in another project: %v, want ErrClientNotFound", err)
	}
	doc, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "old-doc")
	if err != nil || doc.ID != docID.Hex() || doc.ProjectID != database.DefaultProjectID {
		t.Fatalf("old document's key in the default project: %+v, %v; want %s", doc, err, docID.Hex())
	}
	if byKey, err := db.FindDocumentByKey(ctx, database.DefaultProjectID, "old-doc"); err != nil || byKey.ID != docID.Hex() {
		t.Fatalf("FindDocumentByKey of the old document: %+v, %v", byKey, err)
	}
	if _, err := db.FindDocument(ctx, other, docID.Hex()); !errors.Is(err, database.ErrDocumentNotFound) {
		t.Fatalf("old document in another project: %v, want ErrDocumentNotFound", err)
	}
	if fresh, err := db.FindOrCreateDocument(ctx, other, "old-doc"); err != nil || fresh.ID == docID.Hex() {
		t.Fatalf("the key in another project: %+v, %v; want a document of its own", fresh, err)
	}
	// The records themselves were rewritten, so queries by project find them.
	for _, col := range []string{"clients", "documents"} {
		n, err := old.Collection(col).CountDocuments(ctx, bson.D{{Key: "project_id", Value: bson.D{{Key: "$exists", Value: false}}}})
		if err != nil || n != 0 {
			t.Fatalf("%s without project_id after dialling: %d, %v", col, n, err)
		}
	}
}
