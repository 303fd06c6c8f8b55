package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// clientRecord is a client in the clients collection.
type clientRecord struct {
	ID primitive.ObjectID `bson:"_id"`
	// ProjectID is absent from records stored before projects existed;
	// migrate sets it to the default project.
	ProjectID string    `bson:"project_id"`
	Key       string    `bson:"key"`
	Metadata  []pair    `bson:"metadata,omitempty"`
	Status    string    `bson:"status"`
	CreatedAt time.Time `bson:"created_at"`
	UpdatedAt time.Time `bson:"updated_at"`
}

func (r *clientRecord) info() *database.ClientInfo {
	return &database.ClientInfo{
		ID:        r.ID.Hex(),
		ProjectID: projectOf(r.ProjectID),
		Key:       r.Key,
		Metadata:  fromList(r.Metadata),
		Status:    database.ClientStatus(r.Status),
		CreatedAt: r.CreatedAt.UTC(),
		UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// maxInsertRaces bounds the loops that retry after losing an insert race;
// each lost race means another writer made progress, so a few suffice.
const maxInsertRaces = 8

// ActivateClient creates a new activated client with the key. Its ID comes
// from the handle's generator; should another node's ID collide with it, the
// unique _id refuses the insert and a new ID is taken.
func (db *DB) ActivateClient(ctx context.Context, projectID, key string, metadata map[string]string) (*database.ClientInfo, error) {
	for range maxInsertRaces {
		id, err := primitive.ObjectIDFromHex(db.clientIDs.Next())
		if err != nil {
			return nil, fmt.Errorf("activate client %q: %w", key, err)
		}
		t := now()
		rec := clientRecord{
			ID:        id,
			ProjectID: projectID,
			Key:       key,
			Metadata:  toList(metadata, newPair),
			Status:    string(database.ClientActivated),
			CreatedAt: t,
			UpdatedAt: t,
		}
		_, err = db.clients.InsertOne(ctx, &rec)
		if err == nil {
			return rec.info(), nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return nil, wrapErr("activate client", err)
		}
	}
	return nil, fmt.Errorf("activate client %q: insert refused as a duplicate %d times in a row", key, maxInsertRaces)
}

// DeactivateClient marks the client deactivated.
func (db *DB) DeactivateClient(ctx context.Context, projectID, clientID string) (*database.ClientInfo, error) {
	id, err := primitive.ObjectIDFromHex(clientID)
	if err != nil {
		return nil, fmt.Errorf("deactivate client %q: %w", clientID, database.ErrClientNotFound)
	}
	set := bson.D{
		{Key: "status", Value: string(database.ClientDeactivated)},
		{Key: "updated_at", Value: now()},
	}
	var rec clientRecord
	filter := bson.D{{Key: "_id", Value: id}, {Key: "project_id", Value: projectID}}
	err = db.clients.FindOneAndUpdate(ctx, filter, bson.D{{Key: "$set", Value: set}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("deactivate client %q: %w", clientID, database.ErrClientNotFound)
	}
	if err != nil {
		return nil, wrapErr("deactivate client", err)
	}
	return rec.info(), nil
}

// FindClient returns the client or ErrClientNotFound.
func (db *DB) FindClient(ctx context.Context, projectID, clientID string) (*database.ClientInfo, error) {
	id, err := primitive.ObjectIDFromHex(clientID)
	if err != nil {
		return nil, fmt.Errorf("find client %q: %w", clientID, database.ErrClientNotFound)
	}
	var rec clientRecord
	err = db.clients.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find client %q: %w", clientID, database.ErrClientNotFound)
	}
	if err != nil {
		return nil, wrapErr("find client", err)
	}
	// Found by _id alone (the fast lookup), the project is checked here.
	info := rec.info()
	if info.ProjectID != projectID {
		return nil, fmt.Errorf("find client %q of project %s: %w", clientID, projectID, database.ErrClientNotFound)
	}
	return info, nil
}
