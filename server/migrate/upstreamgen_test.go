package migrate_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// upstreamCollections are the collections upstream 0.7.17 creates.
var upstreamCollections = []string{
	"clusternodes", "users", "projects", "members", "invites", "clients", "documents",
	"schemas", "changes", "snapshots", "versionvectors", "snapshot_bodies", "revisions",
}

// packVector encodes a version vector as upstream stores it.
func packVector(actors []primitive.ObjectID, lamports []int64) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(len(actors)))
	for i, a := range actors {
		b = append(b, a[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(lamports[i]))
	}
	return b
}

// upstreamSetRow is a changes row as upstream stores a change of actor
// that sets the root's key to an integer.
func upstreamSetRow(projectID, docID, actor primitive.ObjectID, serverSeq, clientSeq, lamport int64, key string) (bson.D, error) {
	ticket := &api.TimeTicket{Lamport: lamport, ActorId: actor[:]}
	op, err := proto.Marshal(&api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: &api.TimeTicket{ActorId: make([]byte, 12)},
		Key:             key,
		Value: &api.JSONElementSimple{
			CreatedAt: ticket, Type: api.ValueType_VALUE_TYPE_INTEGER,
			Value: binary.LittleEndian.AppendUint32(nil, uint32(clientSeq)),
		},
		ExecutedAt: ticket,
	}}})
	if err != nil {
		return nil, err
	}
	return bson.D{
		{Key: "_id", Value: primitive.NewObjectID()},
		{Key: "project_id", Value: projectID},
		{Key: "doc_id", Value: docID},
		{Key: "server_seq", Value: serverSeq},
		{Key: "actor_id", Value: actor},
		{Key: "client_seq", Value: clientSeq},
		{Key: "lamport", Value: lamport},
		{Key: "message", Value: ""},
		{Key: "operations", Value: bson.A{primitive.Binary{Data: op}}},
		{Key: "presence_change", Value: nil},
		{Key: "version_vector", Value: primitive.Binary{Data: packVector([]primitive.ObjectID{actor}, []int64{lamport})}},
	}, nil
}

// generated is a database generated in upstream's layout: docs documents
// of the default project, each written by one client.
type generated struct {
	db     *mongodrv.Database
	docs   []primitive.ObjectID
	actors []primitive.ObjectID
	heads  []int64
}

// generateUpstream writes docs documents of perDoc changes each.
func generateUpstream(ctx context.Context, db *mongodrv.Database, docs, perDoc int) (*generated, error) {
	for _, c := range upstreamCollections {
		if err := db.CreateCollection(ctx, c); err != nil {
			return nil, fmt.Errorf("create %s: %w", c, err)
		}
	}
	owner := primitive.NewObjectID()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := db.Collection("users").InsertOne(ctx, bson.D{
		{Key: "_id", Value: owner}, {Key: "username", Value: "admin"},
		{Key: "hashed_password", Value: "$2a$10$.6T9tX0UqfJoSeYf3MSjhOnGS3Jc1gAnRjxxiFOzoPYzlZakNpiui"},
		{Key: "created_at", Value: now},
	}); err != nil {
		return nil, err
	}
	if _, err := db.Collection("projects").InsertOne(ctx, bson.D{
		{Key: "_id", Value: primitive.NilObjectID}, {Key: "name", Value: "default"}, {Key: "owner", Value: owner},
		{Key: "public_key", Value: "generated-public"}, {Key: "secret_key", Value: "generated-secret"},
		{Key: "created_at", Value: now},
	}); err != nil {
		return nil, err
	}
	g := &generated{db: db}
	for i := range docs {
		docID, actor := primitive.NewObjectID(), primitive.NewObjectID()
		g.docs, g.actors, g.heads = append(g.docs, docID), append(g.actors, actor), append(g.heads, 0)
		if _, err := db.Collection("documents").InsertOne(ctx, bson.D{
			{Key: "_id", Value: docID}, {Key: "project_id", Value: primitive.NilObjectID},
			{Key: "key", Value: fmt.Sprintf("generated-%d", i)}, {Key: "server_seq", Value: int64(0)},
			{Key: "owner", Value: actor}, {Key: "created_at", Value: now}, {Key: "updated_at", Value: now},
		}); err != nil {
			return nil, err
		}
		if _, err := db.Collection("clients").InsertOne(ctx, bson.D{
			{Key: "_id", Value: actor}, {Key: "project_id", Value: primitive.NilObjectID},
			{Key: "key", Value: fmt.Sprintf("generated-client-%d", i)}, {Key: "status", Value: "activated"},
			{Key: "documents", Value: bson.D{}}, {Key: "created_at", Value: now}, {Key: "updated_at", Value: now},
		}); err != nil {
			return nil, err
		}
		if err := g.appendChanges(ctx, i, perDoc); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// appendChanges adds n changes to document i as upstream would: the rows,
// then the document's server_seq, then its client's checkpoint.
func (g *generated) appendChanges(ctx context.Context, i, n int) error {
	rows := make([]any, 0, min(n, 1000))
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		_, err := g.db.Collection("changes").InsertMany(ctx, rows)
		rows = rows[:0]
		return err
	}
	for range n {
		g.heads[i]++
		seq := g.heads[i]
		row, err := upstreamSetRow(primitive.NilObjectID, g.docs[i], g.actors[i], seq, seq, seq, fmt.Sprintf("k%d", seq%64))
		if err != nil {
			return err
		}
		rows = append(rows, row)
		if len(rows) == 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := g.db.Collection("documents").UpdateOne(ctx, bson.D{{Key: "_id", Value: g.docs[i]}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "server_seq", Value: g.heads[i]}, {Key: "updated_at", Value: now}}}}); err != nil {
		return err
	}
	_, err := g.db.Collection("clients").UpdateOne(ctx, bson.D{{Key: "_id", Value: g.actors[i]}},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "documents." + g.docs[i].Hex(), Value: bson.D{
				{Key: "status", Value: "attached"}, {Key: "server_seq", Value: g.heads[i]},
				{Key: "client_seq", Value: g.heads[i]}, {Key: "epoch", Value: int64(0)},
			}},
			{Key: "updated_at", Value: now},
		}}})
	return err
}

func mongoClient(ctx context.Context, uri string) (*mongodrv.Client, error) {
	return mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
}
