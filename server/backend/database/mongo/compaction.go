package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"google.golang.org/protobuf/proto"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// CompactDocument replaces the document's log with c in three steps, each
// safe to stop after:
//
//  1. c is inserted as a batch after the head, marked with the new document
//     epoch (the unique _id arbitrates it against appends, as any batch);
//  2. the document record takes the new epoch, CompactedSeq and a head hint
//     at c: from here the compaction has happened;
//  3. the batches and snapshots before c are deleted.
//
// A stop after step 1 leaves a marked batch the record does not name, which
// the next ClaimDocument deletes (the compaction did not happen); a stop
// after step 2 leaves old batches and snapshots, which it deletes too.
func (db *DB) CompactDocument(ctx context.Context, docID string, epoch, docEpoch int64, c *database.Change) (*database.DocInfo, error) {
	if c == nil || c.Body == nil {
		return nil, errors.New("compact document: no change")
	}
	rec, err := db.loadDocHex(ctx, docID)
	if err != nil {
		return nil, fmt.Errorf("compact document: %w", err)
	}
	owner, err := db.checkFence(ctx, docID, epoch)
	if err != nil {
		return nil, fmt.Errorf("compact document: %w", err)
	}
	head, err := db.head(ctx, docID, rec.HeadHint)
	if err != nil {
		return nil, fmt.Errorf("compact document: %w", err)
	}
	if c.ServerSeq != head+1 || rec.DocEpoch != docEpoch {
		return nil, fmt.Errorf("compact document %q at %d (epoch %d): head is %d (epoch %d): %w",
			docID, c.ServerSeq, docEpoch, head, rec.DocEpoch, database.ErrConflict)
	}
	body, err := proto.Marshal(c.Body)
	if err != nil {
		return nil, fmt.Errorf("compact document %q: encode change: %w", docID, err)
	}
	batch := &batchRecord{
		ID: batchID(docID, c.ServerSeq), DocID: docID, ServerSeq: c.ServerSeq, LastSeq: c.ServerSeq,
		Epoch: epoch, DocEpoch: docEpoch + 1, Nonce: primitive.NewObjectID(), Actors: []string{c.ActorID},
		Changes:   []changeRecord{{ActorID: c.ActorID, ClientSeq: int64(c.ClientSeq), Body: body}},
		CreatedAt: now(),
	}
	if _, err := db.changes.InsertOne(ctx, batch); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, fmt.Errorf("compact document %q: server_seq %d taken: %w", docID, c.ServerSeq, database.ErrConflict)
		}
		return nil, wrapErr("compact document: store change", err)
	}
	if _, err := db.checkFence(ctx, docID, epoch); err != nil {
		db.dropBatch(ctx, batch)
		return nil, fmt.Errorf("compact document: %w", err)
	}
	filter := bson.D{{Key: "_id", Value: rec.ID}}
	if docEpoch == 0 {
		filter = append(filter, bson.E{Key: "doc_epoch", Value: bson.D{{Key: "$exists", Value: false}}})
	} else {
		filter = append(filter, bson.E{Key: "doc_epoch", Value: docEpoch})
	}
	res, err := db.documents.UpdateOne(ctx, filter, bson.D{
		{Key: "$set", Value: bson.D{{Key: "doc_epoch", Value: docEpoch + 1}, {Key: "compacted_seq", Value: c.ServerSeq}}},
		{Key: "$max", Value: bson.D{{Key: "head_hint", Value: c.ServerSeq}}},
	})
	if err != nil {
		// Unsure whether it landed: the next claim settles it either way.
		return nil, wrapErr("compact document: commit", err)
	}
	if res.MatchedCount == 0 {
		db.dropBatch(ctx, batch)
		return nil, fmt.Errorf("compact document %q: compacted meanwhile: %w", docID, database.ErrConflict)
	}
	if err := db.dropBefore(ctx, docID, c.ServerSeq); err != nil {
		// Compacted; the next claim deletes what is left.
		db.log.Warn("compact document: delete the old history", "doc_id", docID, "err", err)
	}
	rec.DocEpoch, rec.CompactedSeq = docEpoch+1, c.ServerSeq
	return rec.info(c.ServerSeq, owner), nil
}

// dropBatch deletes a compaction's batch that was not committed.
func (db *DB) dropBatch(ctx context.Context, b *batchRecord) {
	if _, err := db.changes.DeleteOne(ctx, bson.D{{Key: "_id", Value: b.ID}, {Key: "nonce", Value: b.Nonce}}); err != nil {
		db.log.Warn("compact document: drop uncommitted change", "doc_id", b.DocID, "err", err)
	}
}

// dropBefore deletes the document's batches and snapshots before seq.
func (db *DB) dropBefore(ctx context.Context, docID string, seq int64) error {
	if _, err := db.changes.DeleteMany(ctx, bson.D{
		{Key: "doc_id", Value: docID}, {Key: "server_seq", Value: bson.D{{Key: "$lt", Value: seq}}},
	}); err != nil {
		return wrapErr("delete compacted changes", err)
	}
	cur, err := db.snapshotHeaders().Find(ctx, bson.D{{Key: "_id", Value: docIDRange(docID)}})
	if err != nil {
		return wrapErr("list snapshots", err)
	}
	var headers []snapshotHeader
	if err := cur.All(ctx, &headers); err != nil {
		return wrapErr("list snapshots", err)
	}
	for _, h := range headers {
		if h.ServerSeq >= seq {
			continue
		}
		p := &pendingParts{
			ID: pendingID(docID, h.ServerSeq, h.Nonce), DocID: docID, ServerSeq: h.ServerSeq,
			Nonce: h.Nonce, Parts: h.Parts, Since: now(), Retired: true,
		}
		_, err := db.snapshotPending().ReplaceOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, p, options.Replace().SetUpsert(true))
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return wrapErr("retire snapshot", err)
		}
		if err := db.discardParts(ctx, p, false); err != nil {
			return err
		}
	}
	return nil
}

// settleCompaction finishes or undoes a compaction its owner left half done
// (see CompactDocument) and returns the head of the log then.
func (db *DB) settleCompaction(ctx context.Context, rec *docRecord, head int64) (int64, error) {
	docID := rec.ID.Hex()
	if head > 0 && head > rec.CompactedSeq {
		last, err := db.batchAt(ctx, docID, head, options.FindOne().SetProjection(bson.D{
			{Key: "doc_epoch", Value: 1}, {Key: "nonce", Value: 1}, {Key: "doc_id", Value: 1},
		}))
		if err != nil {
			return 0, err
		}
		if last != nil && last.DocEpoch > rec.DocEpoch {
			db.dropBatch(ctx, last)
			head--
		}
	}
	if rec.CompactedSeq > 0 {
		if err := db.dropBefore(ctx, docID, rec.CompactedSeq); err != nil {
			return 0, err
		}
	}
	return head, nil
}

// FindCompactionCandidates looks at up to limit live documents after
// afterID, in _id order, and returns those whose log is long enough.
func (db *DB) FindCompactionCandidates(ctx context.Context, minChanges int64, afterID string, limit int) ([]*database.DocInfo, string, error) {
	if limit <= 0 {
		return nil, afterID, nil
	}
	filter := bson.D{{Key: "removed_at", Value: bson.D{{Key: "$exists", Value: false}}}}
	if afterID != "" {
		after, err := primitive.ObjectIDFromHex(afterID)
		if err != nil {
			return nil, "", fmt.Errorf("find compaction candidates after %q: not a document ID", afterID)
		}
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: after}}})
	}
	cur, err := db.documents.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, "", wrapErr("find compaction candidates", err)
	}
	var recs []docRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, "", wrapErr("find compaction candidates", err)
	}
	var out []*database.DocInfo
	for i := range recs {
		head, err := db.head(ctx, recs[i].ID.Hex(), recs[i].HeadHint)
		if err != nil {
			return nil, "", fmt.Errorf("find compaction candidates: %w", err)
		}
		if info := recs[i].info(head, 0); info.LogLen() >= minChanges {
			out = append(out, info)
		}
	}
	next := ""
	if len(recs) == limit {
		next = recs[len(recs)-1].ID.Hex()
	}
	return out, next, nil
}
