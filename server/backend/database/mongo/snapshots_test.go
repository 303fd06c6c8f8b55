package mongo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// Two clients on one database save and read snapshots as two nodes.
func TestSnapshotsTwoClients(t *testing.T) {
	m := testenv.MongoURI(t)
	dbtest.RunSnapshotsShared(t, func(t *testing.T) (database.Database, database.Database) {
		name := m.NewDatabase()
		return dbtest.DialMongo(t, m, name), dbtest.DialMongo(t, m, name)
	})
}

// rawDB is the test's own view of the collections behind the backend.
type rawDB struct {
	parts, headers, pending *mongodrv.Collection
}

func openRaw(t *testing.T, ctx context.Context, m *testenv.Mongo, name string) rawDB {
	t.Helper()
	d := rawDatabase(t, ctx, m, name)
	return rawDB{d.Collection("snapshot_parts"), d.Collection("snapshots"), d.Collection("snapshot_pending")}
}

// rawDatabase connects to the database name on m with the driver alone,
// around the backend, until the test ends.
func rawDatabase(t *testing.T, ctx context.Context, m *testenv.Mongo, name string) *mongodrv.Database {
	t.Helper()
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c.Database(name)
}

// ofDoc matches the records of the document's snapshots by _id.
func ofDoc(docID string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: docID + "/"}, {Key: "$lt", Value: docID + "0"}}}}
}

func ids(t *testing.T, ctx context.Context, col *mongodrv.Collection, docID string) []string {
	t.Helper()
	cur, err := col.Find(ctx, ofDoc(docID), options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// appendLog gives the document a log of n changes.
func appendLog(t *testing.T, ctx context.Context, db *mongo.DB, docID string, n int64) {
	t.Helper()
	cs := make([]*database.Change, n)
	for i := range cs {
		cs[i] = change(int64(i) + 1)
	}
	if err := db.AppendChanges(ctx, docID, 0, cs); err != nil {
		t.Fatal(err)
	}
}

// A snapshot over the 16 MB limit is stored as parts of at most 8 MB, and
// retiring a snapshot removes its parts.
func TestSnapshotParts(t *testing.T) {
	ctx, m, db := mongoTest(t, 60*time.Second)
	raw := openRaw(t, ctx, m, m.Database)
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "parts")
	if err != nil {
		t.Fatal(err)
	}
	appendLog(t, ctx, db, d.ID, 3)

	big := make([]byte, 20<<20)
	_, _ = rand.Read(big)
	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 1, Data: big}); err != nil {
		t.Fatal(err)
	}
	parts := ids(t, ctx, raw.parts, d.ID)
	if len(parts) != 3 {
		t.Fatalf("a 20 MB incompressible snapshot is stored in %d parts (%v), want 3", len(parts), parts)
	}
	for _, id := range parts {
		var p struct {
			Data []byte `bson:"data"`
		}
		if err := raw.parts.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&p); err != nil {
			t.Fatal(err)
		}
		if len(p.Data) > 8<<20 {
			t.Fatalf("part %s holds %d bytes, over 8 MB", id, len(p.Data))
		}
	}
	if got := ids(t, ctx, raw.pending, d.ID); len(got) != 0 {
		t.Fatalf("a finished save left pending records %v", got)
	}

	for seq := int64(2); seq <= 3; seq++ {
		if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: seq, Data: dbtest.SnapshotData(64 << 10)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ids(t, ctx, raw.headers, d.ID); len(got) != 2 {
		t.Fatalf("headers after three saves: %v, want the newest two", got)
	}
	if got := ids(t, ctx, raw.parts, d.ID); len(got) != 2 {
		t.Fatalf("parts after the big snapshot was retired: %v, want one part for each of the two small ones", got)
	}
	if got := ids(t, ctx, raw.pending, d.ID); len(got) != 0 {
		t.Fatalf("retiring left pending records %v", got)
	}
}

// What calls that stopped half way left behind is collected by the next save
// of the document, and only that.
func TestSnapshotLeftoversCollected(t *testing.T) {
	ctx, m, db := mongoTest(t, 60*time.Second)
	raw := openRaw(t, ctx, m, m.Database)
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "leftovers")
	if err != nil {
		t.Fatal(err)
	}
	appendLog(t, ctx, db, d.ID, 10)
	// A published snapshot whose save stopped before it dropped its pending
	// record: the snapshot must stay.
	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 5, Data: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	var kept struct {
		Nonce primitive.ObjectID `bson:"nonce"`
		Parts int                `bson:"parts"`
	}
	keptID := fmt.Sprintf("%s/%019d", d.ID, 5)
	if err := raw.headers.FindOne(ctx, bson.D{{Key: "_id", Value: keptID}}).Decode(&kept); err != nil {
		t.Fatal(err)
	}

	old := time.Now().Add(-2 * time.Hour)
	type leftover struct {
		seq     int64
		since   time.Time
		retired bool
		nonce   primitive.ObjectID
		parts   int
	}
	leftovers := map[string]*leftover{
		"dead upload":     {seq: 3, since: old, nonce: primitive.NewObjectID(), parts: 2},
		"retiring":        {seq: 1, since: time.Now(), retired: true, nonce: primitive.NewObjectID(), parts: 1},
		"live upload":     {seq: 8, since: time.Now(), nonce: primitive.NewObjectID(), parts: 1},
		"published, kept": {seq: 5, since: old, nonce: kept.Nonce, parts: kept.Parts},
	}
	for name, l := range leftovers {
		sid := fmt.Sprintf("%s/%019d", d.ID, l.seq)
		_, err := raw.pending.InsertOne(ctx, bson.D{
			{Key: "_id", Value: sid + "/" + l.nonce.Hex()}, {Key: "doc_id", Value: d.ID}, {Key: "server_seq", Value: l.seq},
			{Key: "nonce", Value: l.nonce}, {Key: "parts", Value: l.parts}, {Key: "since", Value: l.since}, {Key: "retired", Value: l.retired},
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if l.nonce == kept.Nonce {
			continue
		}
		for i := range l.parts {
			if _, err := raw.parts.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("%s/%s/%d", sid, l.nonce.Hex(), i)}, {Key: "data", Value: []byte(name)}}); err != nil {
				t.Fatal(err)
			}
		}
	}

	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 6, Data: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	live := leftovers["live upload"]
	livePending := fmt.Sprintf("%s/%019d/%s", d.ID, live.seq, live.nonce.Hex())
	if got := ids(t, ctx, raw.pending, d.ID); len(got) != 1 || got[0] != livePending {
		t.Fatalf("pending records after the save: %v, want only the live upload's %s", got, livePending)
	}
	if got := ids(t, ctx, raw.parts, d.ID); len(got) != 3 {
		t.Fatalf("parts after the save: %v, want those of snapshots 5 and 6 and of the live upload", got)
	}
	for at, want := range map[int64]string{5: "kept", 10: "new"} {
		s, err := db.FindSnapshot(ctx, d.ID, at)
		if err != nil || string(s.Data) != want {
			t.Fatalf("FindSnapshot(%d) after collecting = %v, %v; want %q", at, s, err, want)
		}
	}
}

// A visible snapshot that lost a part is passed over for an older one, not
// returned cut.
func TestSnapshotMissingPart(t *testing.T) {
	ctx, m, db := mongoTest(t, 60*time.Second)
	raw := openRaw(t, ctx, m, m.Database)
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "missing-part")
	if err != nil {
		t.Fatal(err)
	}
	appendLog(t, ctx, db, d.ID, 2)
	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 1, Data: []byte("older")}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 10<<20)
	_, _ = rand.Read(big)
	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 2, Data: big}); err != nil {
		t.Fatal(err)
	}
	parts := ids(t, ctx, raw.parts, d.ID)
	if len(parts) != 3 {
		t.Fatalf("parts of a 10 MB and a tiny snapshot: %v", parts)
	}
	if _, err := raw.parts.DeleteOne(ctx, bson.D{{Key: "_id", Value: parts[len(parts)-1]}}); err != nil {
		t.Fatal(err)
	}
	s, err := db.FindSnapshot(ctx, d.ID, 2)
	if err != nil || s.ServerSeq != 1 || string(s.Data) != "older" {
		t.Fatalf("FindSnapshot with a part of the newest gone = %v, %v; want the older snapshot", s, err)
	}
	if _, err := db.FindSnapshot(ctx, d.ID, 0); !errors.Is(err, database.ErrSnapshotNotFound) {
		t.Fatalf("FindSnapshot(0) = %v, want ErrSnapshotNotFound", err)
	}
	// Saving that server_seq again replaces the broken snapshot.
	if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 2, Data: []byte("repaired")}); err != nil {
		t.Fatal(err)
	}
	if s, err := db.FindSnapshot(ctx, d.ID, 2); err != nil || string(s.Data) != "repaired" {
		t.Fatalf("FindSnapshot after saving over a broken snapshot = %v, %v", s, err)
	}
	if got := ids(t, ctx, raw.parts, d.ID); len(got) != 2 {
		t.Fatalf("parts after the repair: %v, want one for each snapshot", got)
	}
}

// A save cancelled while it writes its parts leaves either the whole
// snapshot or nothing at all: its parts are deleted although its context is
// done.
func TestSnapshotCancelledMidway(t *testing.T) {
	ctx, m, db := mongoTest(t, 60*time.Second)
	raw := openRaw(t, ctx, m, m.Database)
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	appendLog(t, ctx, db, d.ID, 1)
	big := make([]byte, 20<<20)
	_, _ = rand.Read(big)

	saveCtx, cancelSave := context.WithCancel(ctx)
	defer cancelSave()
	done := make(chan error, 1)
	go func() { done <- db.SaveSnapshot(saveCtx, d.ID, 0, &database.Snapshot{ServerSeq: 1, Data: big}) }()
	// Cancel as soon as the upload is registered, or let the save finish.
	var saveErr error
	for waiting := true; waiting; {
		select {
		case saveErr = <-done:
			waiting = false
		default:
			if n, err := raw.pending.CountDocuments(ctx, ofDoc(d.ID)); err == nil && n > 0 {
				cancelSave()
				saveErr = <-done
				waiting = false
			}
		}
	}
	t.Logf("save returned %v", saveErr)

	s, err := db.FindSnapshot(ctx, d.ID, 1)
	switch {
	case saveErr == nil:
		if err != nil || len(s.Data) != len(big) {
			t.Fatalf("a save that succeeded reads back as %v, %v", s, err)
		}
	case errors.Is(err, database.ErrSnapshotNotFound):
		// The call deleted its parts, but a write it gave up on may land
		// later, so its upload stays registered until it is old: then a
		// save of the document deletes whatever it left.
		if got := ids(t, ctx, raw.pending, d.ID); len(got) > 1 {
			t.Fatalf("a cancelled save left pending records %v", got)
		}
		if _, err := raw.pending.UpdateMany(ctx, ofDoc(d.ID), bson.D{{Key: "$set", Value: bson.D{{Key: "since", Value: time.Now().Add(-2 * time.Hour)}}}}); err != nil {
			t.Fatal(err)
		}
		if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 1, Data: []byte("after")}); err != nil {
			t.Fatal(err)
		}
		if got := ids(t, ctx, raw.parts, d.ID); len(got) != 1 {
			t.Fatalf("parts after the next save: %v, want only its own", got)
		}
		if got := ids(t, ctx, raw.pending, d.ID); len(got) != 0 {
			t.Fatalf("pending records after the next save: %v", got)
		}
		if s, err := db.FindSnapshot(ctx, d.ID, 1); err != nil || string(s.Data) != "after" {
			t.Fatalf("FindSnapshot after the next save = %v, %v", s, err)
		}
	default:
		t.Fatalf("after a cancelled save, FindSnapshot = %v, %v; want the whole snapshot or ErrSnapshotNotFound", s, err)
	}
}
