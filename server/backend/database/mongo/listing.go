package mongo

import (
	"context"
	"fmt"
	"regexp"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// liveFilter selects the project's live documents.
func liveFilter(projectID string) bson.D {
	return bson.D{
		{Key: "project_id", Value: projectID},
		{Key: "removed_at", Value: bson.D{{Key: "$exists", Value: false}}},
	}
}

// findInfos reads the records the filter selects as DocInfos without their
// heads.
func (db *DB) findInfos(ctx context.Context, op string, filter bson.D, opts *options.FindOptions) ([]*database.DocInfo, error) {
	cur, err := db.documents.Find(ctx, filter, opts)
	if err != nil {
		return nil, wrapErr(op, err)
	}
	var recs []*docRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr(op, err)
	}
	out := make([]*database.DocInfo, len(recs))
	for i, r := range recs {
		out[i] = r.info(0, 0)
	}
	return out, nil
}

// ListDocuments returns a page of the project's live documents in ID order.
func (db *DB) ListDocuments(ctx context.Context, projectID, afterID string, pageSize int, forward bool) ([]*database.DocInfo, error) {
	if pageSize <= 0 {
		return nil, nil
	}
	filter := liveFilter(projectID)
	if afterID != "" {
		oid, err := primitive.ObjectIDFromHex(afterID)
		if err != nil {
			return nil, fmt.Errorf("list documents after %q: %w", afterID, database.ErrDocumentNotFound)
		}
		op := "$lt"
		if forward {
			op = "$gt"
		}
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: op, Value: oid}}})
	}
	order := -1
	if forward {
		order = 1
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: order}}).SetLimit(int64(pageSize))
	return db.findInfos(ctx, "list documents", filter, opts)
}

// SearchDocuments returns the project's live documents whose key starts
// with prefix, in key order, and how many match.
func (db *DB) SearchDocuments(ctx context.Context, projectID, prefix string, limit int) ([]*database.DocInfo, int, error) {
	filter := liveFilter(projectID)
	if prefix != "" {
		filter = append(filter, bson.E{Key: "key", Value: bson.D{{Key: "$regex", Value: "^" + regexp.QuoteMeta(prefix)}}})
	}
	total, err := db.documents.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrapErr("search documents: count", err)
	}
	if limit <= 0 {
		return nil, int(total), nil
	}
	opts := options.Find().SetSort(bson.D{{Key: "key", Value: 1}}).SetLimit(int64(limit))
	docs, err := db.findInfos(ctx, "search documents", filter, opts)
	if err != nil {
		return nil, 0, err
	}
	return docs, int(total), nil
}
