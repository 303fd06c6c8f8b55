package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// attachmentRecord is an attachment in the attachments collection. Its _id
// is made of the client and document IDs, so that the frequent lookups and
// replacements of one attachment are by _id (the only filter FerretDB's SQLite
// backend answers without scanning the collection).
type attachmentRecord struct {
	ID            string    `bson:"_id"`
	ClientID      string    `bson:"client_id"`
	DocID         string    `bson:"doc_id"`
	Status        string    `bson:"status"`
	ServerSeq     int64     `bson:"server_seq"`
	ClientSeq     int64     `bson:"client_seq"`
	AttachedAt    int64     `bson:"attached_at"`
	VersionVector []lamport `bson:"version_vector,omitempty"`
	UpdatedAt     time.Time `bson:"updated_at"`
	// Epoch is the owner epoch that wrote the record.
	Epoch int64 `bson:"epoch"`
	// DocEpoch is database.Attachment's (absent: 0).
	DocEpoch int64 `bson:"doc_epoch,omitempty"`
}

func toAttachmentRecord(a *database.Attachment) *attachmentRecord {
	rec := &attachmentRecord{
		ID:         attachmentID(a.ClientID, a.DocID),
		ClientID:   a.ClientID,
		DocID:      a.DocID,
		Status:     string(a.Status),
		ServerSeq:  a.ServerSeq,
		ClientSeq:  int64(a.ClientSeq),
		AttachedAt: a.AttachedAt,
		UpdatedAt:  a.UpdatedAt.UTC().Truncate(time.Millisecond),
		DocEpoch:   a.DocEpoch,
	}
	if a.UpdatedAt.IsZero() {
		rec.UpdatedAt = now()
	}
	rec.VersionVector = toList(a.VersionVector, newLamport)
	return rec
}

func (r *attachmentRecord) attachment() *database.Attachment {
	a := &database.Attachment{
		ClientID:      r.ClientID,
		DocID:         r.DocID,
		Status:        database.AttachmentStatus(r.Status),
		ServerSeq:     r.ServerSeq,
		ClientSeq:     uint32(r.ClientSeq),
		AttachedAt:    r.AttachedAt,
		UpdatedAt:     r.UpdatedAt.UTC(),
		VersionVector: fromList(r.VersionVector),
		DocEpoch:      r.DocEpoch,
	}
	return a
}

func attachmentID(clientID, docID string) string { return clientID + "/" + docID }

func attachmentKey(clientID, docID string) bson.D {
	return bson.D{{Key: "_id", Value: attachmentID(clientID, docID)}}
}

// FindAttachment returns the client's attachment to the document.
func (db *DB) FindAttachment(ctx context.Context, clientID, docID string) (*database.Attachment, error) {
	var rec attachmentRecord
	err := db.attachments.FindOne(ctx, attachmentKey(clientID, docID)).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find attachment of client %q to document %q: %w", clientID, docID, database.ErrAttachmentNotFound)
	}
	if err != nil {
		return nil, wrapErr("find attachment", err)
	}
	return rec.attachment(), nil
}

// ListAttachments returns the document's attachments with status Attached.
func (db *DB) ListAttachments(ctx context.Context, docID string) ([]*database.Attachment, error) {
	out, err := db.listAttachments(ctx, bson.D{
		{Key: "doc_id", Value: docID},
		{Key: "status", Value: string(database.Attached)},
	})
	if err != nil {
		return nil, fmt.Errorf("list attachments of document %q: %w", docID, err)
	}
	return out, nil
}

// ListClientAttachments returns the client's attachments with status Attached.
func (db *DB) ListClientAttachments(ctx context.Context, clientID string) ([]*database.Attachment, error) {
	out, err := db.listAttachments(ctx, bson.D{
		{Key: "client_id", Value: clientID},
		{Key: "status", Value: string(database.Attached)},
	})
	if err != nil {
		return nil, fmt.Errorf("list attachments of client %q: %w", clientID, err)
	}
	return out, nil
}

// CountClientAttachments returns how many documents the client has attached,
// through the client_status index.
func (db *DB) CountClientAttachments(ctx context.Context, clientID string) (int, error) {
	n, err := db.attachments.CountDocuments(ctx, bson.D{
		{Key: "client_id", Value: clientID},
		{Key: "status", Value: string(database.Attached)},
	})
	if err != nil {
		return 0, wrapErr(fmt.Sprintf("count attachments of client %q", clientID), err)
	}
	return int(n), nil
}

// ListDocumentClients returns the IDs of every client that ever attached
// the document.
func (db *DB) ListDocumentClients(ctx context.Context, docID string) ([]string, error) {
	cur, err := db.attachments.Find(ctx, bson.D{{Key: "doc_id", Value: docID}},
		options.Find().SetProjection(bson.D{{Key: "client_id", Value: 1}}))
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("list clients of document %q", docID), err)
	}
	var recs []struct {
		ClientID string `bson:"client_id"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr(fmt.Sprintf("list clients of document %q", docID), err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ClientID
	}
	return out, nil
}

func (db *DB) listAttachments(ctx context.Context, filter bson.D) ([]*database.Attachment, error) {
	cur, err := db.attachments.Find(ctx, filter)
	if err != nil {
		return nil, wrapErr("query", err)
	}
	var recs []attachmentRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr("read", err)
	}
	out := make([]*database.Attachment, 0, len(recs))
	for i := range recs {
		out = append(out, recs[i].attachment())
	}
	return out, nil
}

// UpdateAttachment creates or replaces the attachment keyed by (ClientID,
// DocID) unless a higher epoch than epoch claimed the document. A whole
// record is replaced, so racing updates leave one of them, never a mix.
//
// Each record keeps the epoch that wrote it, and the replacement only matches
// a record of an epoch no higher, so on MongoDB an old owner's write that
// passed the fence check just before a takeover cannot overwrite what the
// new owner wrote after it. (FerretDB does not apply the condition
// atomically; there the fence check alone holds.)
func (db *DB) UpdateAttachment(ctx context.Context, a *database.Attachment, epoch int64) error {
	if a == nil {
		return errors.New("update attachment: nil attachment")
	}
	if _, err := db.docAndFence(ctx, a.DocID, epoch); err != nil {
		return fmt.Errorf("update attachment: %w", err)
	}
	rec := toAttachmentRecord(a)
	rec.Epoch = epoch
	id := attachmentID(a.ClientID, a.DocID)
	filter := bson.D{{Key: "_id", Value: id}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "epoch", Value: bson.D{{Key: "$lte", Value: epoch}}}},
		bson.D{{Key: "epoch", Value: bson.D{{Key: "$exists", Value: false}}}},
	}}}
	for range maxInsertRaces {
		_, err := db.attachments.ReplaceOne(ctx, filter, rec, options.Replace().SetUpsert(true))
		if err == nil {
			return nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return wrapErr("update attachment", err)
		}
		// The upsert found no record to replace but one exists: it was
		// written by a higher epoch, or a racing upsert created it.
		var stored struct {
			Epoch int64 `bson:"epoch"`
		}
		err = db.attachments.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&stored)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return wrapErr("update attachment", err)
		}
		if err == nil && stored.Epoch > epoch {
			return fmt.Errorf("update attachment of client %q to document %q: written by epoch %d, above %d: %w",
				a.ClientID, a.DocID, stored.Epoch, epoch, database.ErrFenced)
		}
	}
	return fmt.Errorf("update attachment of client %q to document %q: lost %d races in a row", a.ClientID, a.DocID, maxInsertRaces)
}
