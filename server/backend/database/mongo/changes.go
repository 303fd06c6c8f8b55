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
// Its _id is made of the document ID and ServerSeq (see batchID), so the
// batch starting at a given server_seq is found by _id, which FerretDB's
// SQLite backend answers without scanning the collection.
type batchRecord struct {
	ID        string `bson:"_id"`
	DocID     string `bson:"doc_id"`
	ServerSeq int64  `bson:"server_seq"`
	LastSeq   int64  `bson:"last_seq"`
	Epoch     int64  `bson:"epoch"`
	// Nonce tells this call's insert from another writer's batch of the
	// same _id when a driver retry reports a duplicate.
	Nonce primitive.ObjectID `bson:"nonce"`
	// DocEpoch, on a batch CompactDocument stored, is the document epoch
	// the compaction commits; until the document record has it, the batch
	// is not part of the log (see settleCompaction).
	DocEpoch int64 `bson:"doc_epoch,omitempty"`
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

// batchID is the _id of the document's batch that starts at server_seq.
func batchID(docID string, serverSeq int64) string {
	return fmt.Sprintf("%s/%d", docID, serverSeq)
}

// batchAt returns the document's batch that starts at serverSeq, or nil.
func (db *DB) batchAt(ctx context.Context, docID string, serverSeq int64, opts ...*options.FindOneOptions) (*batchRecord, error) {
	var rec batchRecord
	err := db.changes.FindOne(ctx, bson.D{{Key: "_id", Value: batchID(docID, serverSeq)}}, opts...).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("read change batch", err)
	}
	return &rec, nil
}

// onlyBounds projects a batch to its server_seq range.
func onlyBounds() *options.FindOneOptions {
	return options.FindOne().SetProjection(bson.D{{Key: "server_seq", Value: 1}, {Key: "last_seq", Value: 1}})
}

// walkHints bounds how far a head lookup follows batches past the hint
// before it refreshes the hint.
const walkHints = 8

// head returns the last server_seq of the document's log, 0 if empty. It
// follows the batches from hint, the end of a batch known to be stored (or
// 0), each found by _id from the end of the one before.
func (db *DB) head(ctx context.Context, docID string, hint int64) (int64, error) {
	h := hint
	for steps := 0; ; steps++ {
		next, err := db.batchAt(ctx, docID, h+1, onlyBounds())
		if err != nil {
			return 0, fmt.Errorf("read head of change log: %w", err)
		}
		if next == nil {
			if steps > walkHints {
				db.raiseHeadHint(ctx, docID, h)
			}
			return h, nil
		}
		if next.LastSeq < next.ServerSeq {
			return 0, fmt.Errorf("read head of change log: batch %s ends at %d", next.ID, next.LastSeq)
		}
		h = next.LastSeq
	}
}

// raiseHeadHint records that the log reaches at least last. It is only a
// hint, so a lost update (FerretDB) or a failure costs later lookups some
// steps and nothing else: every value ever written is the end of a stored
// batch, never beyond the head.
func (db *DB) raiseHeadHint(ctx context.Context, docID string, last int64) {
	id, err := primitive.ObjectIDFromHex(docID)
	if err != nil {
		return
	}
	_, err = db.documents.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "head_hint", Value: last}}}})
	if err != nil {
		db.log.Debug("raise head hint", "doc_id", docID, "err", err)
	}
}

// AppendChanges stores the batch as one record, or nothing.
//
// The batch is refused with ErrFenced if a higher epoch claimed the document,
// and with ErrConflict unless it extends the log exactly: a batch must end at
// its first server_seq - 1 (found by following batches from the document's
// head hint), and no batch may start at its first server_seq (the _id and a
// unique key). Batch records are never deleted, so a batch that ends where
// this one begins stays there, and the insert alone decides between writers
// that extend the same head.
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
		ID:        batchID(docID, first),
		DocID:     docID,
		ServerSeq: first,
		LastSeq:   changes[len(changes)-1].ServerSeq,
		Epoch:     epoch,
		Nonce:     primitive.NewObjectID(),
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

	doc, err := db.docAndFence(ctx, docID, epoch)
	if err != nil {
		return fmt.Errorf("append changes: %w", err)
	}
	// Find the batch boundary at first-1, starting from a stored boundary.
	end := doc.HeadHint
	for end < first-1 {
		next, err := db.batchAt(ctx, docID, end+1, onlyBounds())
		if err != nil {
			return fmt.Errorf("append changes: %w", err)
		}
		if next == nil {
			return fmt.Errorf("append changes to %q: the log ends at %d, the batch starts at %d: %w", docID, end, first, database.ErrConflict)
		}
		end = next.LastSeq
	}
	if end != first-1 {
		return fmt.Errorf("append changes to %q: server_seq %d is taken: %w", docID, first, database.ErrConflict)
	}

	if _, err := db.changes.InsertOne(ctx, rec); err != nil {
		if !mongo.IsDuplicateKeyError(err) {
			return wrapErr("append changes", err)
		}
		// A driver retry of an insert that had succeeded also ends here: the
		// stored batch is this call's own if it carries its nonce.
		stored, serr := db.batchAt(ctx, docID, first, options.FindOne().SetProjection(bson.D{{Key: "nonce", Value: 1}}))
		if serr != nil {
			return fmt.Errorf("append changes: check a duplicate: %w", serr)
		}
		if stored == nil || stored.Nonce != rec.Nonce {
			return fmt.Errorf("append changes to %q: server_seq %d..%d taken: %w", docID, first, rec.LastSeq, database.ErrConflict)
		}
	}
	db.raiseHeadHintLater(ctx, docID, rec.LastSeq)
	return nil
}

// findWalk bounds how many batches FindChanges follows by _id before it
// asks for the rest of the range with one query.
const findWalk = 4

// FindChanges returns the changes with from <= server_seq <= to, in order.
// A range that starts a batch (as a pull from a checkpoint does) is read by
// following batches by _id; the rest with one range query on the index.
func (db *DB) FindChanges(ctx context.Context, docID string, from, to int64) ([]*database.Change, error) {
	from = max(from, 1)
	if from > to {
		return nil, nil
	}
	var out []*database.Change
	for steps := 0; steps < findWalk; steps++ {
		rec, err := db.batchAt(ctx, docID, from)
		if err != nil {
			return nil, fmt.Errorf("find changes: %w", err)
		}
		if rec == nil {
			if steps == 0 {
				break // from is not a batch start (or past the head): query
			}
			return out, nil // the previous batch ended the log
		}
		if out, err = appendBatch(out, rec, from, to); err != nil {
			return nil, err
		}
		if rec.LastSeq >= to {
			return out, nil
		}
		from = rec.LastSeq + 1
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
	for cur.Next(ctx) {
		var rec batchRecord
		if err := cur.Decode(&rec); err != nil {
			return nil, fmt.Errorf("find changes: decode batch: %w", err)
		}
		if out, err = appendBatch(out, &rec, from, to); err != nil {
			return nil, err
		}
	}
	if err := cur.Err(); err != nil {
		return nil, wrapErr("find changes", err)
	}
	return out, nil
}

// appendBatch decodes the changes of rec with from <= server_seq <= to.
func appendBatch(out []*database.Change, rec *batchRecord, from, to int64) ([]*database.Change, error) {
	for i, c := range rec.Changes {
		seq := rec.ServerSeq + int64(i)
		if seq < from || seq > to {
			continue
		}
		body := &api.Change{}
		if err := proto.Unmarshal(c.Body, body); err != nil {
			return nil, fmt.Errorf("find changes: decode change %d of %q: %w", seq, rec.DocID, err)
		}
		out = append(out, &database.Change{
			ServerSeq: seq,
			ActorID:   c.ActorID,
			ClientSeq: uint32(c.ClientSeq),
			Body:      body,
		})
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
