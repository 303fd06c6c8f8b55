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

// docRecord is a document in the documents collection. Its head and owner
// epoch are not stored here: they are read from changes and claims.
type docRecord struct {
	ID primitive.ObjectID `bson:"_id"`
	// ProjectID is absent from records stored before projects existed;
	// migrate sets it to the default project.
	ProjectID string     `bson:"project_id"`
	Key       string     `bson:"key"`
	CreatedAt time.Time  `bson:"created_at"`
	RemovedAt *time.Time `bson:"removed_at,omitempty"`
	// HeadHint is the end of a stored batch of the log, at most the head:
	// where head lookups start. See raiseHeadHint.
	HeadHint int64 `bson:"head_hint"`
	// DocEpoch and CompactedSeq are database.DocInfo's, set by
	// CompactDocument (absent: never compacted).
	DocEpoch     int64 `bson:"doc_epoch,omitempty"`
	CompactedSeq int64 `bson:"compacted_seq,omitempty"`
	// Schema is the key of the schema the document is bound to.
	Schema string `bson:"schema,omitempty"`
}

// keyRecord names the live document of a key in a project; its _id is
// keyRecordID of the two.
type keyRecord struct {
	Key   string             `bson:"_id"`
	DocID primitive.ObjectID `bson:"doc_id"`
}

// claimRecord is one owner epoch that claimed a document.
type claimRecord struct {
	DocID     string    `bson:"doc_id"`
	Epoch     int64     `bson:"epoch"`
	ClaimedAt time.Time `bson:"claimed_at"`
}

// keyRecordID is the _id of the key record of a project's key: the key
// itself in the default project, so the records stored before projects
// existed stay valid as they are and old and new nodes agree on them, and
// "<project ID>/<key>" in the others (a key never holds a "/"). The unique
// _id keeps a key to one live document per project.
func keyRecordID(projectID, key string) string {
	if projectID == database.DefaultProjectID {
		return key
	}
	return projectID + "/" + key
}

// projectOf is the project of a record: the default one for a record stored
// before projects existed and not migrated yet.
func projectOf(stored string) string {
	if stored == "" {
		return database.DefaultProjectID
	}
	return stored
}

func (r *docRecord) info(serverSeq, epoch int64) *database.DocInfo {
	info := &database.DocInfo{
		ID:        r.ID.Hex(),
		ProjectID: projectOf(r.ProjectID),
		Key:       r.Key,
		ServerSeq: serverSeq,
		Epoch:     epoch,
		CreatedAt: r.CreatedAt.UTC(),

		DocEpoch:     r.DocEpoch,
		CompactedSeq: r.CompactedSeq,
		Schema:       r.Schema,
	}
	if r.RemovedAt != nil {
		info.RemovedAt = r.RemovedAt.UTC()
	}
	return info
}

// FindOrCreateDocument returns the live document with the key, creating it if
// there is none. Racing creators agree through the doc_keys record: the loser
// deletes the document record it made and returns the winner's.
func (db *DB) FindOrCreateDocument(ctx context.Context, projectID, key string) (*database.DocInfo, error) {
	keyID := keyRecordID(projectID, key)
	for range maxInsertRaces {
		var kr keyRecord
		err := db.docKeys.FindOne(ctx, bson.D{{Key: "_id", Value: keyID}}).Decode(&kr)
		switch {
		case err == nil:
			rec, err := db.loadDoc(ctx, kr.DocID)
			if err == nil && rec.RemovedAt == nil {
				return db.docInfo(ctx, rec)
			}
			if err != nil && !errors.Is(err, database.ErrDocumentNotFound) {
				return nil, fmt.Errorf("find or create document %q: %w", key, err)
			}
			// The key still names a removed document (its remover stopped
			// between the two steps of RemoveDocument): finish the removal.
			if _, err := db.docKeys.DeleteOne(ctx, bson.D{{Key: "_id", Value: keyID}, {Key: "doc_id", Value: kr.DocID}}); err != nil {
				return nil, wrapErr("find or create document: release key of removed document", err)
			}
			continue
		case !errors.Is(err, mongo.ErrNoDocuments):
			return nil, wrapErr("find or create document", err)
		}

		rec := &docRecord{ID: primitive.NewObjectID(), ProjectID: projectID, Key: key, CreatedAt: now()}
		if _, err := db.documents.InsertOne(ctx, rec); err != nil {
			return nil, wrapErr("find or create document: insert document", err)
		}
		_, err = db.docKeys.InsertOne(ctx, &keyRecord{Key: keyID, DocID: rec.ID})
		if err == nil {
			return rec.info(0, 0), nil
		}
		// Whatever happened, the record made above names no key: drop it.
		// Failing to drop it leaves an unreachable record, nothing worse.
		if _, derr := db.documents.DeleteOne(ctx, bson.D{{Key: "_id", Value: rec.ID}}); derr != nil {
			db.log.Warn("drop unused document record", "doc_id", rec.ID.Hex(), "err", derr)
		}
		if !mongo.IsDuplicateKeyError(err) {
			return nil, wrapErr("find or create document: insert key", err)
		}
	}
	return nil, fmt.Errorf("find or create document %q: lost %d creation races in a row", key, maxInsertRaces)
}

// loadDoc reads a document record or reports ErrDocumentNotFound.
func (db *DB) loadDoc(ctx context.Context, id primitive.ObjectID) (*docRecord, error) {
	var rec docRecord
	err := db.documents.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("document %q: %w", id.Hex(), database.ErrDocumentNotFound)
	}
	if err != nil {
		return nil, wrapErr("load document", err)
	}
	return &rec, nil
}

// loadDocHex is loadDoc for an ID in its string form.
func (db *DB) loadDocHex(ctx context.Context, docID string) (*docRecord, error) {
	id, err := primitive.ObjectIDFromHex(docID)
	if err != nil {
		return nil, fmt.Errorf("document %q: %w", docID, database.ErrDocumentNotFound)
	}
	return db.loadDoc(ctx, id)
}

// docInfo completes a record with the head of its log and its owner epoch.
func (db *DB) docInfo(ctx context.Context, rec *docRecord) (*database.DocInfo, error) {
	docID := rec.ID.Hex()
	head, err := db.head(ctx, docID, rec.HeadHint)
	if err != nil {
		return nil, err
	}
	epoch, err := db.ownerEpoch(ctx, docID)
	if err != nil {
		return nil, err
	}
	return rec.info(head, epoch), nil
}

// FindDocument returns the document (live or removed) or ErrDocumentNotFound.
func (db *DB) FindDocument(ctx context.Context, projectID, docID string) (*database.DocInfo, error) {
	rec, err := db.loadDocHex(ctx, docID)
	if err != nil {
		return nil, fmt.Errorf("find document: %w", err)
	}
	if projectOf(rec.ProjectID) != projectID {
		return nil, fmt.Errorf("find document %q of project %s: %w", docID, projectID, database.ErrDocumentNotFound)
	}
	info, err := db.docInfo(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("find document: %w", err)
	}
	return info, nil
}

// ownerEpoch returns the highest epoch that claimed the document, 0 if none.
func (db *DB) ownerEpoch(ctx context.Context, docID string) (int64, error) {
	var rec claimRecord
	err := db.claims.FindOne(ctx, bson.D{{Key: "doc_id", Value: docID}},
		options.FindOne().SetSort(bson.D{{Key: "epoch", Value: -1}})).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, wrapErr("read owner epoch", err)
	}
	return rec.Epoch, nil
}

// checkFence reports ErrFenced if an epoch higher than epoch claimed the
// document, and returns the highest claimed epoch otherwise.
func (db *DB) checkFence(ctx context.Context, docID string, epoch int64) (int64, error) {
	owner, err := db.ownerEpoch(ctx, docID)
	if err != nil {
		return 0, err
	}
	if epoch < owner {
		return 0, fmt.Errorf("document %q: epoch %d below owner epoch %d: %w", docID, epoch, owner, database.ErrFenced)
	}
	return owner, nil
}

// ClaimDocument records epoch as a claim of the document, then fails with
// ErrFenced if a higher epoch has claimed it too. Of two racing claims the
// lower one therefore always fails: whichever reads the highest epoch second
// sees both records. The head is read from the log after the claim.
func (db *DB) ClaimDocument(ctx context.Context, docID string, epoch int64) (*database.DocInfo, error) {
	rec, err := db.loadDocHex(ctx, docID)
	if err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	if epoch > 0 {
		_, err := db.claims.InsertOne(ctx, &claimRecord{DocID: docID, Epoch: epoch, ClaimedAt: now()})
		if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: this epoch claimed it before
			return nil, wrapErr("claim document", err)
		}
	}
	owner, err := db.checkFence(ctx, docID, epoch)
	if err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	head, err := db.head(ctx, docID, rec.HeadHint)
	if err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	// A compaction its owner did not finish is undone or completed here,
	// before the new owner reads the log.
	if head, err = db.settleCompaction(ctx, rec, head); err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	return rec.info(head, owner), nil
}

// RemoveDocument marks the document removed and releases its key, so the key
// starts a new document. Removing a removed document changes nothing.
func (db *DB) RemoveDocument(ctx context.Context, docID string, epoch int64) error {
	rec, err := db.loadDocHex(ctx, docID)
	if err != nil {
		return fmt.Errorf("remove document: %w", err)
	}
	if _, err := db.checkFence(ctx, docID, epoch); err != nil {
		return fmt.Errorf("remove document: %w", err)
	}
	if rec.RemovedAt == nil {
		_, err := db.documents.UpdateOne(ctx,
			bson.D{{Key: "_id", Value: rec.ID}, {Key: "removed_at", Value: bson.D{{Key: "$exists", Value: false}}}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "removed_at", Value: now()}}}})
		if err != nil {
			return wrapErr("remove document", err)
		}
	}
	// Only the key record naming this document is deleted: a newer document
	// of the same key keeps its own.
	keyID := keyRecordID(projectOf(rec.ProjectID), rec.Key)
	if _, err := db.docKeys.DeleteOne(ctx, bson.D{{Key: "_id", Value: keyID}, {Key: "doc_id", Value: rec.ID}}); err != nil {
		return wrapErr("remove document: release key", err)
	}
	return nil
}
