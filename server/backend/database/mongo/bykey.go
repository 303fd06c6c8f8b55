package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// FindDocumentByKey returns the live document with the key (through its
// doc_keys record) or, when none is live, the newest removed one of the
// project, through the project_key index on MongoDB (FerretDB scans: the call
// serves operators, not clients).
func (db *DB) FindDocumentByKey(ctx context.Context, projectID, key string) (*database.DocInfo, error) {
	var kr keyRecord
	err := db.docKeys.FindOne(ctx, bson.D{{Key: "_id", Value: keyRecordID(projectID, key)}}).Decode(&kr)
	switch {
	case err == nil:
		rec, err := db.loadDoc(ctx, kr.DocID)
		if err == nil {
			return db.infoByKey(ctx, key, rec)
		}
		if !errors.Is(err, database.ErrDocumentNotFound) {
			return nil, fmt.Errorf("find document by key %q: %w", key, err)
		}
	case !errors.Is(err, mongo.ErrNoDocuments):
		return nil, wrapErr("find document by key", err)
	}
	// Object IDs grow with creation time: the highest is the newest.
	var rec docRecord
	err = db.documents.FindOne(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "key", Value: key}},
		options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}})).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find document by key %q: %w", key, database.ErrDocumentNotFound)
	}
	if err != nil {
		return nil, wrapErr("find document by key", err)
	}
	return db.infoByKey(ctx, key, &rec)
}

// infoByKey completes rec with its head and epoch for FindDocumentByKey.
func (db *DB) infoByKey(ctx context.Context, key string, rec *docRecord) (*database.DocInfo, error) {
	info, err := db.docInfo(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("find document by key %q: %w", key, err)
	}
	return info, nil
}
