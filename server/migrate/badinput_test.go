package migrate_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/migrate"
)

func TestRefusesASourceThatIsNotYorkie(t *testing.T) {
	e := newEnv(t)
	other := e.m.NewDatabase()
	e.m.DropWhenDone(t, other)
	_, err := e.srcDB.Client().Database(other).Collection("orders").InsertOne(e.ctx, bson.D{{Key: "item", Value: "tea"}})
	require.NoError(t, err)
	_, err = e.open(t, other)
	require.ErrorIs(t, err, migrate.ErrNotYorkie)
	require.Contains(t, err.Error(), other)
}

func TestRefusesTheLayoutOfAnotherVersion(t *testing.T) {
	e := newEnv(t)
	// Upstream before 0.7.10 had no snapshot_bodies.
	require.NoError(t, e.srcDB.Collection("snapshot_bodies").Drop(e.ctx))
	_, err := e.open(t, e.src)
	require.ErrorIs(t, err, migrate.ErrAnotherLayout)
	require.Contains(t, err.Error(), "snapshot_bodies")
}

// docByKey returns the data set's document of the key.
func docByKey(t *testing.T, e *env, key string) (id primitive.ObjectID, projectID string) {
	t.Helper()
	for _, d := range e.want.Documents {
		if d.Key == key {
			oid, err := primitive.ObjectIDFromHex(d.ID)
			require.NoError(t, err)
			for _, p := range e.want.Projects {
				if p.Name == d.Project {
					return oid, p.ID
				}
			}
		}
	}
	t.Fatalf("no document %q in the data set", key)
	return primitive.NilObjectID, ""
}

// A change or snapshot that does not decode fails its document, naming the
// record, and leaves nothing of that document visible; the other documents
// are imported, and once the source is mended a run completes it.
func TestUndecodableRecordsFailTheirDocumentOnly(t *testing.T) {
	e := newEnv(t)
	sink, sinkProject := docByKey(t, e, "a-kitchen-sink")
	long, longProject := docByKey(t, e, "a-long-history")

	var change bson.M
	require.NoError(t, e.srcDB.Collection("changes").FindOne(e.ctx,
		bson.D{{Key: "doc_id", Value: sink}, {Key: "server_seq", Value: int64(40)}}).Decode(&change))
	ops := change["operations"]
	_, err := e.srcDB.Collection("changes").UpdateOne(e.ctx, bson.D{{Key: "_id", Value: change["_id"]}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "operations", Value: bson.A{primitive.Binary{Data: []byte{0xff, 0xff, 0xff}}}}}}})
	require.NoError(t, err)
	var snap bson.M
	// The newest: the one a reader here starts from, which is imported.
	require.NoError(t, e.srcDB.Collection("snapshots").FindOne(e.ctx, bson.D{{Key: "doc_id", Value: long}},
		options.FindOne().SetSort(bson.D{{Key: "server_seq", Value: -1}})).Decode(&snap))
	body := snap["snapshot"]
	_, err = e.srcDB.Collection("snapshots").UpdateMany(e.ctx, bson.D{{Key: "doc_id", Value: long}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "snapshot", Value: primitive.Binary{Data: []byte{0x01, 0x02, 0x03}}}}}})
	require.NoError(t, err)

	im, err := e.open(t, e.src)
	require.NoError(t, err)
	rep, err := im.Run(e.ctx)
	require.ErrorIs(t, err, migrate.ErrFailed)
	require.ErrorIs(t, err, migrate.ErrUndecodable)
	msg := err.Error()
	require.Contains(t, msg, `document "a-kitchen-sink"`)
	require.Contains(t, msg, change["_id"].(primitive.ObjectID).Hex(), "the change is named")
	require.Contains(t, msg, `document "a-long-history"`)
	require.Contains(t, msg, snap["_id"].(primitive.ObjectID).Hex(), "the snapshot is named")
	require.Len(t, rep.Failures, 2)

	for _, d := range []struct{ project, key string }{{sinkProject, "a-kitchen-sink"}, {longProject, "a-long-history"}} {
		_, err := e.target.FindDocumentByKey(e.ctx, d.project, d.key)
		require.ErrorIs(t, err, database.ErrDocumentNotFound, "%s is not half-imported", d.key)
	}
	for _, d := range e.want.Documents {
		if d.Key == "a-kitchen-sink" || d.Key == "a-long-history" {
			continue
		}
		_, err := e.target.FindDocumentByKey(e.ctx, projectOf(e, d.Project), d.Key)
		require.NoError(t, err, "%s is imported", d.Key)
	}

	// Mended, the source imports whole.
	_, err = e.srcDB.Collection("changes").UpdateOne(e.ctx, bson.D{{Key: "_id", Value: change["_id"]}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "operations", Value: ops}}}})
	require.NoError(t, err)
	_, err = e.srcDB.Collection("snapshots").UpdateOne(e.ctx, bson.D{{Key: "_id", Value: snap["_id"]}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "snapshot", Value: body}}}})
	require.NoError(t, err)
	var other bson.M
	require.NoError(t, e.srcDB.Collection("snapshots").FindOne(e.ctx,
		bson.D{{Key: "doc_id", Value: long}, {Key: "_id", Value: bson.D{{Key: "$ne", Value: snap["_id"]}}}}).Decode(&other))
	_, err = e.srcDB.Collection("snapshots").DeleteOne(e.ctx, bson.D{{Key: "_id", Value: other["_id"]}})
	require.NoError(t, err)
	_, err = im.Run(e.ctx)
	require.NoError(t, err)
	for _, c := range e.want.AttachedClients {
		a, err := e.target.FindAttachment(e.ctx, c.ClientID, c.DocID)
		require.NoError(t, err, "the clients of a mended document are imported with it")
		require.Equal(t, database.Attached, a.Status)
	}
	v, err := im.Verify(e.ctx)
	require.NoError(t, err)
	require.Empty(t, v.Differences)
}

func projectOf(e *env, name string) string {
	for _, p := range e.want.Projects {
		if p.Name == name {
			return p.ID
		}
	}
	return ""
}

// A project whose key another project of the target holds stops the run
// before any document, naming both projects.
func TestRefusesAProjectKeyTakenInTheTarget(t *testing.T) {
	e := newEnv(t)
	var alpha struct {
		ID        primitive.ObjectID `bson:"_id"`
		PublicKey string             `bson:"public_key"`
	}
	require.NoError(t, e.srcDB.Collection("projects").FindOne(e.ctx, bson.D{{Key: "name", Value: "upstream-a-alpha"}}).Decode(&alpha))
	mine, err := e.target.CreateProject(e.ctx, "someone", "mine")
	require.NoError(t, err)
	_, err = e.srcDB.Collection("projects").UpdateOne(e.ctx, bson.D{{Key: "_id", Value: alpha.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "public_key", Value: mine.PublicKey}}}})
	require.NoError(t, err)

	im, err := e.open(t, e.src)
	require.NoError(t, err)
	rep, err := im.Run(e.ctx)
	require.ErrorIs(t, err, mongo.ErrImportConflict)
	require.Contains(t, err.Error(), alpha.ID.Hex())
	require.Contains(t, err.Error(), mine.ID)
	require.Zero(t, rep.Documents, "no document is imported")
	_, err = e.target.FindProjectByID(e.ctx, alpha.ID.Hex())
	require.True(t, errors.Is(err, database.ErrProjectNotFound))
}
