package mongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// colStrikes holds the attempt counts of the admin API's throttles, one
// record per key (its _id).
const colStrikes = "strikes"

type strikeRecord struct {
	Key   string    `bson:"_id"`
	Count int       `bson:"count"`
	Last  time.Time `bson:"last"`
}

// AddStrike implements database.Strikes: a stale count is reset first,
// then the strike is counted in one atomic upsert.
func (db *DB) AddStrike(ctx context.Context, key string, now time.Time, window time.Duration) (int, error) {
	col := db.db.Collection(colStrikes)
	if _, err := col.UpdateOne(ctx,
		bson.D{{Key: "_id", Value: key}, {Key: "last", Value: bson.D{{Key: "$lte", Value: now.Add(-window)}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "count", Value: 0}}}}); err != nil {
		return 0, wrapErr("mongo: reset strikes of "+key, err)
	}
	var r strikeRecord
	err := col.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: key}},
		bson.D{
			{Key: "$inc", Value: bson.D{{Key: "count", Value: 1}}},
			{Key: "$max", Value: bson.D{{Key: "last", Value: now}}},
		},
		options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)).Decode(&r)
	if err != nil {
		return 0, wrapErr("mongo: add strike to "+key, err)
	}
	return r.Count, nil
}

// FindStrikes implements database.Strikes.
func (db *DB) FindStrikes(ctx context.Context, key string) (int, time.Time, error) {
	var r strikeRecord
	err := db.db.Collection(colStrikes).FindOne(ctx, bson.D{{Key: "_id", Value: key}}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, wrapErr("mongo: find strikes of "+key, err)
	}
	return r.Count, r.Last.UTC(), nil
}

// ClearStrikes implements database.Strikes.
func (db *DB) ClearStrikes(ctx context.Context, key string) error {
	if _, err := db.db.Collection(colStrikes).DeleteOne(ctx, bson.D{{Key: "_id", Value: key}}); err != nil {
		return wrapErr("mongo: clear strikes of "+key, err)
	}
	return nil
}

// RemoveStrikesBefore implements database.Strikes.
func (db *DB) RemoveStrikesBefore(ctx context.Context, before time.Time) (int, error) {
	res, err := db.db.Collection(colStrikes).DeleteMany(ctx, bson.D{{Key: "last", Value: bson.D{{Key: "$lt", Value: before}}}})
	if err != nil {
		return 0, wrapErr("mongo: remove strikes", err)
	}
	return int(res.DeletedCount), nil
}
