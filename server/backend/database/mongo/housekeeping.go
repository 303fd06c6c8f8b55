package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// touchBatch bounds the IDs of one update, keeping the filter small.
const touchBatch = 500

// TouchClients sets updated_at to at on the activated clients among
// clientIDs whose updated_at is earlier, with one update per batch of IDs.
// A touch that a racing update makes the server drop (FerretDB may) only
// leaves an earlier time, which is harmless.
func (db *DB) TouchClients(ctx context.Context, clientIDs []string, at time.Time) error {
	at = at.UTC().Truncate(time.Millisecond)
	ids := make([]primitive.ObjectID, 0, min(len(clientIDs), touchBatch))
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		filter := bson.D{
			{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}},
			{Key: "status", Value: string(database.ClientActivated)},
			{Key: "updated_at", Value: bson.D{{Key: "$lt", Value: at}}},
		}
		update := bson.D{{Key: "$set", Value: bson.D{{Key: "updated_at", Value: at}}}}
		if _, err := db.clients.UpdateMany(ctx, filter, update); err != nil {
			return wrapErr("touch clients", err)
		}
		ids = ids[:0]
		return nil
	}
	for _, hexID := range clientIDs {
		id, err := primitive.ObjectIDFromHex(hexID)
		if err != nil {
			continue // no client can have it
		}
		ids = append(ids, id)
		if len(ids) == touchBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// FindInactiveClients returns, in _id order, up to limit activated clients
// with an _id above afterID whose updated_at is before before. The
// status_updated index serves the filter on MongoDB.
func (db *DB) FindInactiveClients(ctx context.Context, before time.Time, afterID string, limit int) ([]*database.ClientInfo, error) {
	if limit <= 0 {
		return nil, nil
	}
	filter := bson.D{
		{Key: "status", Value: string(database.ClientActivated)},
		{Key: "updated_at", Value: bson.D{{Key: "$lt", Value: before.UTC()}}},
	}
	if afterID != "" {
		after, err := primitive.ObjectIDFromHex(afterID)
		if err != nil {
			return nil, fmt.Errorf("find inactive clients after %q: not a client ID", afterID)
		}
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}})
	}
	cur, err := db.clients.Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrapErr("find inactive clients", err)
	}
	var recs []clientRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr("find inactive clients", err)
	}
	out := make([]*database.ClientInfo, len(recs))
	for i := range recs {
		out[i] = recs[i].info()
	}
	return out, nil
}
