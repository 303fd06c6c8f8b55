package integration_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// TestDataFromBeforeProjectsBelongsToTheDefaultProject writes a document through a
// server, turns its records into what a server from before projects stored
// (no project_id), and starts a server on them: clients without an API key
// find the document and its changes, clients of another project do not.
func TestDataFromBeforeProjectsBelongsToTheDefaultProject(t *testing.T) {
	m := testenv.MongoURI(t)
	var db *mongo.DB
	start := func() *server.Server {
		t.Helper()
		db = dbtest.DialMongo(t, m, m.Database)
		return startNode(t, server.Config{BackendConfig: server.BackendConfig{DB: db}})
	}

	first := start()
	key := wire.UniqueKey(t, "legacy")
	writer := newReplica(t, servertest.Client(t, first, servertest.ConnectJSON))
	writer.MustAttach(key)
	writer.Edit(5)
	writer.MustPushPull()
	stopNode(t, first)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
	wire.Must(t, err, "connect")
	defer func() { _ = c.Disconnect(context.Background()) }()
	for _, col := range []string{"clients", "documents"} {
		res, err := c.Database(m.Database).Collection(col).UpdateMany(ctx, bson.D{},
			bson.D{{Key: "$unset", Value: bson.D{{Key: "project_id", Value: ""}}}})
		wire.Must(t, err, "strip project_id from "+col)
		if res.ModifiedCount == 0 {
			t.Fatalf("no %s record had a project_id to strip", col)
		}
	}

	second := start()
	reader := newReplica(t, servertest.Client(t, second, servertest.ConnectJSON))
	reader.MustAttach(key)
	if reader.DocID != writer.DocID {
		t.Fatalf("the key names document %s after the migration, want the old %s", reader.DocID, writer.DocID)
	}
	reader.MustPushPull()
	if got := len(reader.Seen); got != 6 { // the writer's presence and 5 edits
		t.Fatalf("reader pulled %d changes of the old document, want 6", got)
	}
	// The old client is the default project's too: it goes on syncing.
	writer.C = servertest.Client(t, second, servertest.ConnectJSON)
	writer.Edit(1)
	writer.MustPushPull()

	other, err := db.CreateProject(wire.Context(t), "owner", "other")
	wire.Must(t, err, "create project")
	stranger := newReplica(t, keyedClient(t, second, servertest.ConnectJSON, other.PublicKey))
	stranger.MustAttach(key)
	if stranger.DocID == writer.DocID {
		t.Fatalf("another project's client attached the default project's document %s", writer.DocID)
	}
}
