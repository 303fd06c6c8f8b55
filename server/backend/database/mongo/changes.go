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
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// batchRecord is one AppendChanges batch in the changes collection: the
// changes with server_seq from ServerSeq to LastSeq, stored by one insert.
type batchRecord struct {
	ID        primitive.ObjectID `bson:"_id"`
	DocID     string             `bson:"doc_id"`
	ServerSeq int64              `bson:"server_seq"`
	LastSeq   int64              `bson:"last_seq"`
	Epoch     int64              `bson:"epoch"`
	// Actors lists the distinct actors of the batch, for LastClientSeq.
	Actors    []string       `bson:"actors"`
	Changes   []changeRecord `bson:"changes"`
	CreatedAt time.Time      `bson:"created_at"`
}

// changeRecord is one change of a batch; Body is the binary protobuf.
type changeRecord struct {
	ActorID   string `bson:"actor"`
	ClientSeq int64  `bson:"client_seq"`
	Body      []byte `bson:"body"`
}

// head returns the last server_seq of the document's log, 0 if empty.
func (db *DB) head(ctx context.Context, docID string) (int64, error) {
	var rec struct {
		LastSeq int64 `bson:"last_seq"`
	}
	err := db.changes.FindOne(ctx, bson.D{{Key: "doc_id", Value: docID}},
		options.FindOne().
			SetSort(bson.D{{Key: "last_seq", Value: -1}}).
			SetProjection(bson.D{{Key: "last_seq", Value: 1}})).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, wrapErr("read head of change log", err)
	}
	return rec.LastSeq, nil
}

// AppendChanges stores the batch as one record, or nothing.
//
// The batch is refused with ErrFenced if a higher epoch claimed the document,
// and with ErrConflict unless it extends the log exactly: the batch ending at
// its first server_seq - 1 must exist, and no batch may start at its first
// server_seq (the unique key). Batch records are never deleted, so a batch
// that ends where this one begins stays there, and the insert alone decides
// between writers that extend the same head.
//
// When the outcome cannot be known (the connection broke during the insert)
// the error wraps ErrUnavailable; the caller reloads the log to learn it.
func (db *DB) AppendChanges(ctx context.Context, docID string, epoch int64, changes []*database.Change) error {
	if len(changes) == 0 {
		return nil
	}
	first := changes[0].ServerSeq
	if first < 1 {
		return fmt.Errorf("append changes to %q: server_seq %d is not positive", docID, first)
	}
	rec := &batchRecord{
		ID:        primitive.NewObjectID(),
		DocID:     docID,
		ServerSeq: first,
		LastSeq:   changes[len(changes)-1].ServerSeq,
		Epoch:     epoch,
		Changes:   make([]changeRecord, 0, len(changes)),
		CreatedAt: now(),
	}
	seen := make(map[string]bool)
	for i, c := range changes {
		if c == nil || c.Body == nil {
			return fmt.Errorf("append changes to %q: change %d has no body", docID, i)
		}
		if i > 0 && c.ServerSeq != changes[i-1].ServerSeq+1 {
			return fmt.Errorf("append changes to %q: server_seq %d does not follow %d", docID, c.ServerSeq, changes[i-1].ServerSeq)
		}
		body, err := proto.Marshal(c.Body)
		if err != nil {
			return fmt.Errorf("append changes to %q: encode change %d: %w", docID, c.ServerSeq, err)
		}
		rec.Changes = append(rec.Changes, changeRecord{ActorID: c.ActorID, ClientSeq: int64(c.ClientSeq), Body: body})
		if !seen[c.ActorID] {
			seen[c.ActorID] = true
			rec.Actors = append(rec.Actors, c.ActorID)
		}
	}

	if _, err := db.checkFence(ctx, docID, epoch); err != nil {
		return fmt.Errorf("append changes: %w", err)
	}
	if first > 1 {
		n, err := db.changes.CountDocuments(ctx,
			bson.D{{Key: "doc_id", Value: docID}, {Key: "last_seq", Value: first - 1}},
			options.Count().SetLimit(1))
		if err != nil {
			return wrapErr("append changes: find previous batch", err)
		}
		if n == 0 {
			return fmt.Errorf("append changes to %q: no change %d before the batch: %w", docID, first-1, database.ErrConflict)
		}
	}
	_, err := db.changes.InsertOne(ctx, rec)
	if err == nil {
		return nil
	}
	if !mongo.IsDuplicateKeyError(err) {
		return wrapErr("append changes", err)
	}
	// A driver retry of an insert that had succeeded also ends here: if the
	// record with this batch's own _id is stored, the batch is in the log.
	n, cerr := db.changes.CountDocuments(ctx, bson.D{{Key: "_id", Value: rec.ID}}, options.Count().SetLimit(1))
	if cerr != nil {
		return wrapErr("append changes: check a duplicate", cerr)
	}
	if n == 1 {
		return nil
	}
	return fmt.Errorf("append changes to %q: server_seq %d..%d taken: %w", docID, first, rec.LastSeq, database.ErrConflict)
}

// FindChanges returns the changes with from <= server_seq <= to, in order.
func (db *DB) FindChanges(ctx context.Context, docID string, from, to int64) ([]*database.Change, error) {
	if from > to {
		return nil, nil
	}
	cur, err := db.changes.Find(ctx, bson.D{
		{Key: "doc_id", Value: docID},
		{Key: "last_seq", Value: bson.D{{Key: "$gte", Value: from}}},
		{Key: "server_seq", Value: bson.D{{Key: "$lte", Value: to}}},
	}, options.Find().SetSort(bson.D{{Key: "server_seq", Value: 1}}))
	if err != nil {
		return nil, wrapErr("find changes", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()

	var out []*database.Change
	for cur.Next(ctx) {
		var rec batchRecord
		if err := cur.Decode(&rec); err != nil {
			return nil, fmt.Errorf("find changes: decode batch: %w", err)
		}
		for i, c := range rec.Changes {
			seq := rec.ServerSeq + int64(i)
			if seq < from || seq > to {
				continue
			}
			body := &api.Change{}
			if err := proto.Unmarshal(c.Body, body); err != nil {
				return nil, fmt.Errorf("find changes: decode change %d of %q: %w", seq, docID, err)
			}
			out = append(out, &database.Change{
				ServerSeq: seq,
				ActorID:   c.ActorID,
				ClientSeq: uint32(c.ClientSeq),
				Body:      body,
			})
		}
	}
	if err := cur.Err(); err != nil {
		return nil, wrapErr("find changes", err)
	}
	return out, nil
}

// LastClientSeq returns the highest client_seq the actor stored in the
// document's log with server_seq > after, 0 if none.
func (db *DB) LastClientSeq(ctx context.Context, docID, actorID string, after int64) (uint32, error) {
	cur, err := db.changes.Find(ctx, bson.D{
		{Key: "doc_id", Value: docID},
		{Key: "last_seq", Value: bson.D{{Key: "$gt", Value: after}}},
		{Key: "actors", Value: actorID},
	})
	if err != nil {
		return 0, wrapErr("last client seq", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()

	var last uint32
	for cur.Next(ctx) {
		var rec batchRecord
		if err := cur.Decode(&rec); err != nil {
			return 0, fmt.Errorf("last client seq: decode batch: %w", err)
		}
		for i, c := range rec.Changes {
			if rec.ServerSeq+int64(i) > after && c.ActorID == actorID && uint32(c.ClientSeq) > last {
				last = uint32(c.ClientSeq)
			}
		}
	}
	if err := cur.Err(); err != nil {
		return 0, wrapErr("last client seq", err)
	}
	return last, nil
}
