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

// ProjectActivity implements database.Stats. A document's activity is read
// from the attachments of the clients active in the range.
func (db *DB) ProjectActivity(ctx context.Context, projectID string, from, to time.Time) (*database.ProjectActivity, error) {
	op := fmt.Sprintf("mongo: activity of project %s", projectID)
	out := &database.ProjectActivity{}
	var err error
	if out.Documents, err = db.documents.CountDocuments(ctx, bson.M{"project_id": projectID, "removed_at": bson.M{"$exists": false}}); err != nil {
		return nil, wrapErr(op, err)
	}
	if out.Clients, err = db.clients.CountDocuments(ctx, bson.M{"project_id": projectID, "status": string(database.ClientActivated)}); err != nil {
		return nil, wrapErr(op, err)
	}
	inRange := bson.M{"$gte": from, "$lt": to}
	cur, err := db.clients.Find(ctx, bson.M{"project_id": projectID, "updated_at": inRange},
		options.Find().SetProjection(bson.M{"key": 1, "updated_at": 1}).SetLimit(database.MaxActivityRecords))
	if err != nil {
		return nil, wrapErr(op, err)
	}
	var clients []struct {
		ID        primitive.ObjectID `bson:"_id"`
		Key       string             `bson:"key"`
		UpdatedAt time.Time          `bson:"updated_at"`
	}
	if err := cur.All(ctx, &clients); err != nil {
		return nil, wrapErr(op, err)
	}
	ids := make(bson.A, 0, len(clients))
	for _, c := range clients {
		out.ActiveClients = append(out.ActiveClients, database.Activity{Key: c.Key, At: c.UpdatedAt.UTC()})
		ids = append(ids, c.ID.Hex())
	}
	if len(ids) == 0 {
		return out, nil
	}
	cur, err = db.attachments.Find(ctx, bson.M{"client_id": bson.M{"$in": ids}, "updated_at": inRange},
		options.Find().SetProjection(bson.M{"doc_id": 1, "updated_at": 1}).SetLimit(database.MaxActivityRecords))
	if err != nil {
		return nil, wrapErr(op, err)
	}
	var atts []struct {
		DocID     string    `bson:"doc_id"`
		UpdatedAt time.Time `bson:"updated_at"`
	}
	if err := cur.All(ctx, &atts); err != nil {
		return nil, wrapErr(op, err)
	}
	last := map[string]time.Time{}
	for _, a := range atts {
		if t := a.UpdatedAt.UTC(); t.After(last[a.DocID]) {
			last[a.DocID] = t
		}
	}
	for id, at := range last {
		out.ActiveDocuments = append(out.ActiveDocuments, database.Activity{Key: id, At: at})
	}
	return out, nil
}
