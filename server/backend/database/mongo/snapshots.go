package mongo

// Snapshots live in three collections, and every access to them is by _id or
// by a range of _id (the index every server has; FerretDB's SQLite backend
// answers _id equality without reading the collection, and would otherwise
// read the big parts of every document):
//
//   - snapshot_parts: a snapshot compressed, then cut into parts of at most
//     snapshotPartSize bytes, so that a snapshot of any size is made of
//     records under the 16 MB limit. _id: doc/seq/nonce/part, where the
//     nonce is the saving call's own, so racing or retried saves never mix
//     their parts.
//   - snapshots: one header per visible snapshot, inserted after all its
//     parts. _id: doc/seq, the seq zero padded so that _id order is
//     server_seq order; the insert thereby also decides between racing
//     saves of one server_seq. A header names the nonce of its parts.
//   - snapshot_pending: sets of parts no header names, or is about to stop
//     naming: an upload in progress, or a retired snapshot being deleted.
//     A call that stops half way leaves its record there, and a later save
//     of the document finishes the work.
//
// So a reader finds a header only once its parts are all stored. Retiring a
// snapshot deletes its header before its parts; a reader that loses a part
// to that finds the header gone and looks again.

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
	"github.com/yorkie-affinity/yorkie/server/backend/database/snapcodec"
)

// Collection names of snapshots.
const (
	colSnapshots       = "snapshots"
	colSnapshotParts   = "snapshot_parts"
	colSnapshotPending = "snapshot_pending"
)

const (
	// snapshotPartSize bounds a part: half the 16 MB document limit leaves
	// room for the record's other fields and for servers (FerretDB) that
	// store binary data in a larger encoding.
	snapshotPartSize = 8 << 20
	// orphanAge is how long an upload may stay pending before a later save
	// takes it for the leftover of a call that died, and deletes its parts.
	orphanAge = time.Hour
	// publishWithin is how long an upload may take before it gives up
	// rather than publish parts that might be collected as orphans. Well
	// under orphanAge, so that clocks of nodes may differ by minutes.
	publishWithin = orphanAge / 2
	// cleanupTimeout bounds deleting a failed save's parts, which happens
	// even when the save's own context is done.
	cleanupTimeout = 30 * time.Second
	// readAttempts bounds how many headers FindSnapshot tries (retired
	// under it or unreadable) before it reports none: the caller then
	// replays the whole log, slower but right.
	readAttempts = 4
)

// snapshotState is what DB keeps for snapshots. Its zero value is ready.
type snapshotState struct {
	codec snapcodec.Codec
}

// snapshotHeader makes a snapshot visible; see the comment at the top.
type snapshotHeader struct {
	ID            string             `bson:"_id"`
	DocID         string             `bson:"doc_id"`
	ServerSeq     int64              `bson:"server_seq"`
	Lamport       int64              `bson:"lamport"`
	VersionVector []lamport          `bson:"version_vector,omitempty"`
	Nonce         primitive.ObjectID `bson:"nonce"`
	Parts         int                `bson:"parts"`
	PackedLen     int64              `bson:"packed_len"`
	RawLen        int64              `bson:"raw_len"`
	Codec         string             `bson:"codec"`
	Epoch         int64              `bson:"epoch"`
	CreatedAt     time.Time          `bson:"created_at"`
}

// snapshotPart is one part of a compressed snapshot.
type snapshotPart struct {
	ID   string `bson:"_id"`
	Data []byte `bson:"data"`
}

// pendingParts names a set of parts that no header names, or soon will not.
type pendingParts struct {
	ID        string             `bson:"_id"`
	DocID     string             `bson:"doc_id"`
	ServerSeq int64              `bson:"server_seq"`
	Nonce     primitive.ObjectID `bson:"nonce"`
	Parts     int                `bson:"parts"`
	Since     time.Time          `bson:"since"`
	// Retired: the parts belonged to a header that is being deleted, so
	// they can go at once. Otherwise an upload is in progress.
	Retired bool `bson:"retired"`
}

func snapshotID(docID string, serverSeq int64) string {
	return fmt.Sprintf("%s/%019d", docID, serverSeq)
}

func partID(docID string, serverSeq int64, nonce primitive.ObjectID, part int) string {
	return fmt.Sprintf("%s/%s/%d", snapshotID(docID, serverSeq), nonce.Hex(), part)
}

func pendingID(docID string, serverSeq int64, nonce primitive.ObjectID) string {
	return snapshotID(docID, serverSeq) + "/" + nonce.Hex()
}

// docIDRange matches the _id of every snapshot record of the document: they
// all start with docID + "/", and '0' follows '/'.
func docIDRange(docID string) bson.D {
	return bson.D{{Key: "$gt", Value: docID + "/"}, {Key: "$lt", Value: docID + "0"}}
}

func (db *DB) snapshotHeaders() *mongo.Collection { return db.db.Collection(colSnapshots) }
func (db *DB) snapshotParts() *mongo.Collection   { return db.db.Collection(colSnapshotParts) }
func (db *DB) snapshotPending() *mongo.Collection { return db.db.Collection(colSnapshotPending) }

// SaveSnapshot stores s in parts, then makes it visible with its header, then
// retires the document's snapshots beyond the newest database.SnapshotsKept
// and collects what earlier calls left behind. A stored snapshot of the same
// server_seq is kept unless it lost parts; then it is replaced.
//
// Fencing is checked before the parts are written and again before the
// header is: as with AppendChanges, a save that passed the check just before
// a newer claim may still land after it, which is harmless here since a
// snapshot only restates the log up to its server_seq.
func (db *DB) SaveSnapshot(ctx context.Context, docID string, epoch int64, s *database.Snapshot) (err error) {
	if s == nil {
		return errors.New("save snapshot: nil snapshot")
	}
	doc, err := db.loadDocHex(ctx, docID)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if _, err := db.checkFence(ctx, docID, epoch); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	head, err := db.head(ctx, docID, doc.HeadHint)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if first := max(doc.CompactedSeq, 1); s.ServerSeq < first || s.ServerSeq > head {
		return fmt.Errorf("save snapshot of %q: server_seq %d outside the log %d..%d", docID, s.ServerSeq, first, head)
	}
	existing, err := db.headerByID(ctx, snapshotID(docID, s.ServerSeq))
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if existing != nil {
		// The first snapshot of a server_seq stays, unless it lost parts:
		// then this save replaces it.
		old := &pendingParts{
			ID: pendingID(docID, s.ServerSeq, existing.Nonce), DocID: docID, ServerSeq: s.ServerSeq,
			Nonce: existing.Nonce, Parts: existing.Parts,
		}
		whole, err := db.publishedWhole(ctx, old)
		if err != nil {
			return fmt.Errorf("save snapshot: %w", err)
		}
		if whole {
			return nil
		}
		if err := db.discardParts(ctx, old, false); err != nil {
			return fmt.Errorf("save snapshot: replace a broken snapshot: %w", err)
		}
	}

	packed, err := db.snaps.codec.Compress(s.Data)
	if err != nil {
		return fmt.Errorf("save snapshot of %q at %d: %w", docID, s.ServerSeq, err)
	}
	nonce := primitive.NewObjectID()
	parts := (len(packed) + snapshotPartSize - 1) / snapshotPartSize
	pending := &pendingParts{
		ID:        pendingID(docID, s.ServerSeq, nonce),
		DocID:     docID,
		ServerSeq: s.ServerSeq,
		Nonce:     nonce,
		Parts:     parts,
		Since:     now(),
	}
	if _, err := db.snapshotPending().InsertOne(ctx, pending); err != nil {
		return wrapErr("save snapshot: register upload", err)
	}
	started := time.Now()
	published := false
	defer func() {
		if published {
			return
		}
		// Whatever failed, the parts are not needed (and, if the header's
		// insert had landed unseen, it is taken back first). When a write's
		// outcome is unknown it may still land after this, so the pending
		// record then stays for a later save to finish the job.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		keep := errors.Is(err, database.ErrUnavailable)
		if derr := db.discardParts(cctx, pending, keep); derr != nil {
			db.log.Warn("discard parts of an unpublished snapshot", "doc_id", docID, "server_seq", s.ServerSeq, "err", derr)
		}
	}()

	for i := range parts {
		part := &snapshotPart{
			ID:   partID(docID, s.ServerSeq, nonce, i),
			Data: packed[i*snapshotPartSize : min((i+1)*snapshotPartSize, len(packed))],
		}
		// A duplicate can only be this call's own insert, retried.
		if _, err := db.snapshotParts().InsertOne(ctx, part); err != nil && !mongo.IsDuplicateKeyError(err) {
			return wrapErr(fmt.Sprintf("save snapshot of %q at %d: write part %d of %d", docID, s.ServerSeq, i+1, parts), err)
		}
	}
	if took := time.Since(started); took > publishWithin {
		return fmt.Errorf("save snapshot of %q at %d: writing the parts took %s, longer than an upload may stay pending", docID, s.ServerSeq, took)
	}
	if _, err := db.checkFence(ctx, docID, epoch); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}

	header := &snapshotHeader{
		ID:            snapshotID(docID, s.ServerSeq),
		DocID:         docID,
		ServerSeq:     s.ServerSeq,
		Lamport:       s.Lamport,
		VersionVector: toList(s.VersionVector, newLamport),
		Nonce:         nonce,
		Parts:         parts,
		PackedLen:     int64(len(packed)),
		RawLen:        int64(len(s.Data)),
		Codec:         snapcodec.Name,
		Epoch:         epoch,
		CreatedAt:     now(),
	}
	if _, err := db.snapshotHeaders().InsertOne(ctx, header); err != nil {
		if !mongo.IsDuplicateKeyError(err) {
			return wrapErr(fmt.Sprintf("save snapshot of %q at %d: publish", docID, s.ServerSeq), err)
		}
		// Another save of this server_seq won, unless this is a retry of
		// this call's own insert.
		stored, serr := db.headerByID(ctx, header.ID)
		if serr != nil {
			return fmt.Errorf("save snapshot: check a duplicate: %w", serr)
		}
		if stored == nil || stored.Nonce != nonce {
			return nil // the first snapshot of a server_seq stays; ours is discarded
		}
	}
	published = true
	if _, err := db.snapshotPending().DeleteOne(ctx, bson.D{{Key: "_id", Value: pending.ID}}); err != nil {
		// Left pending, it is found published and dropped later.
		db.log.Debug("drop pending record of a published snapshot", "doc_id", docID, "err", err)
	}
	if err := db.tidySnapshots(ctx, docID); err != nil {
		// The snapshot is stored; what is left is collected by a later save.
		db.log.Warn("tidy snapshots", "doc_id", docID, "err", err)
	}
	return nil
}

// headerByID returns the header with the _id, or nil.
func (db *DB) headerByID(ctx context.Context, id string) (*snapshotHeader, error) {
	var h snapshotHeader
	err := db.snapshotHeaders().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&h)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapErr("read snapshot header", err)
	}
	return &h, nil
}

// tidySnapshots retires the document's snapshots beyond the newest
// database.SnapshotsKept, and deletes the parts of retired snapshots and of
// uploads pending for longer than orphanAge that no header names.
func (db *DB) tidySnapshots(ctx context.Context, docID string) error {
	cur, err := db.snapshotHeaders().Find(ctx, bson.D{{Key: "_id", Value: docIDRange(docID)}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}))
	if err != nil {
		return wrapErr("list snapshots", err)
	}
	var headers []snapshotHeader
	if err := cur.All(ctx, &headers); err != nil {
		return wrapErr("list snapshots", err)
	}
	for _, h := range headers[min(len(headers), database.SnapshotsKept):] {
		p := &pendingParts{
			ID: pendingID(docID, h.ServerSeq, h.Nonce), DocID: docID, ServerSeq: h.ServerSeq,
			Nonce: h.Nonce, Parts: h.Parts, Since: now(), Retired: true,
		}
		// Recorded first, so that a call stopping half way leaves the parts
		// named for the next tidy. A duplicate is a racing tidy's record.
		_, err := db.snapshotPending().ReplaceOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, p, options.Replace().SetUpsert(true))
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return wrapErr("retire snapshot", err)
		}
		if err := db.discardParts(ctx, p, false); err != nil {
			return err
		}
	}

	cur, err = db.snapshotPending().Find(ctx, bson.D{{Key: "_id", Value: docIDRange(docID)}})
	if err != nil {
		return wrapErr("list pending snapshot parts", err)
	}
	var pending []pendingParts
	if err := cur.All(ctx, &pending); err != nil {
		return wrapErr("list pending snapshot parts", err)
	}
	cutoff := now().Add(-orphanAge)
	for i := range pending {
		p := &pending[i]
		if !p.Retired && p.Since.After(cutoff) {
			continue // an upload that may still publish
		}
		if !p.Retired {
			// An old upload. If it was published whole, its call stopped
			// before dropping this record; then only the record goes.
			whole, err := db.publishedWhole(ctx, p)
			if err != nil {
				return err
			}
			if whole {
				if _, err := db.snapshotPending().DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ID}}); err != nil {
					return wrapErr("drop pending record of a published snapshot", err)
				}
				continue
			}
		}
		if err := db.discardParts(ctx, p, false); err != nil {
			return err
		}
	}
	return nil
}

// publishedWhole reports whether a header names the upload's parts and they
// are all there. (A header can outlive its parts when its insert landed after
// its call gave up and deleted them.)
func (db *DB) publishedWhole(ctx context.Context, p *pendingParts) (bool, error) {
	h, err := db.headerByID(ctx, snapshotID(p.DocID, p.ServerSeq))
	if err != nil || h == nil || h.Nonce != p.Nonce {
		return false, err
	}
	for i := range h.Parts {
		err := db.snapshotParts().FindOne(ctx, bson.D{{Key: "_id", Value: partID(p.DocID, p.ServerSeq, p.Nonce, i)}},
			options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, wrapErr("check snapshot part", err)
		}
	}
	return true, nil
}

// discardParts deletes the header naming the parts, if any, then the parts,
// then (unless keepRecord) the record that names them. Every step is
// idempotent, so racing cleaners do no harm.
func (db *DB) discardParts(ctx context.Context, p *pendingParts, keepRecord bool) error {
	if _, err := db.snapshotHeaders().DeleteOne(ctx, bson.D{
		{Key: "_id", Value: snapshotID(p.DocID, p.ServerSeq)}, {Key: "nonce", Value: p.Nonce},
	}); err != nil {
		return wrapErr("delete snapshot header", err)
	}
	// One by _id each: a filter on other fields would make FerretDB read
	// every part of every document.
	for i := range p.Parts {
		if _, err := db.snapshotParts().DeleteOne(ctx, bson.D{{Key: "_id", Value: partID(p.DocID, p.ServerSeq, p.Nonce, i)}}); err != nil {
			return wrapErr("delete snapshot part", err)
		}
	}
	if keepRecord {
		return nil
	}
	if _, err := db.snapshotPending().DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ID}}); err != nil {
		return wrapErr("drop pending snapshot record", err)
	}
	return nil
}

// errPartGone: a part of a snapshot being read is not there.
var errPartGone = errors.New("snapshot part gone")

// FindSnapshot returns the document's newest snapshot with ServerSeq <=
// atOrBefore. A snapshot retired while it is read is given up for the
// newest one then visible. A snapshot that cannot be read whole (a part
// lost, damaged bytes) is passed over for an older one, with a warning:
// snapshots only spare a replay of the log, which stays the truth.
func (db *DB) FindSnapshot(ctx context.Context, docID string, atOrBefore int64) (*database.Snapshot, error) {
	upto := atOrBefore
	for range readAttempts {
		if upto < 1 {
			break
		}
		filter := bson.D{{Key: "_id", Value: bson.D{
			{Key: "$gt", Value: docID + "/"},
			{Key: "$lte", Value: snapshotID(docID, upto)},
		}}}
		var h snapshotHeader
		err := db.snapshotHeaders().FindOne(ctx, filter, options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}})).Decode(&h)
		if errors.Is(err, mongo.ErrNoDocuments) {
			break
		}
		if err != nil {
			return nil, wrapErr("find snapshot", err)
		}
		packed, err := db.readParts(ctx, &h)
		if errors.Is(err, errPartGone) {
			still, serr := db.headerByID(ctx, h.ID)
			if serr != nil {
				return nil, fmt.Errorf("find snapshot: %w", serr)
			}
			if still == nil || still.Nonce != h.Nonce {
				continue // retired meanwhile: look again
			}
			err = fmt.Errorf("%w: %w", snapcodec.ErrCorrupt, err)
		}
		var data []byte
		if err == nil {
			if h.Codec != snapcodec.Name {
				err = fmt.Errorf("unknown format %q: %w", h.Codec, snapcodec.ErrCorrupt)
			} else {
				data, err = db.snaps.codec.Decompress(packed, int(h.RawLen))
			}
		}
		if errors.Is(err, snapcodec.ErrCorrupt) {
			db.log.Warn("passing over an unreadable snapshot", "doc_id", docID, "server_seq", h.ServerSeq, "err", err)
			upto = h.ServerSeq - 1
			continue
		}
		if err != nil {
			return nil, err
		}
		return &database.Snapshot{
			ServerSeq:     h.ServerSeq,
			Lamport:       h.Lamport,
			VersionVector: fromList(h.VersionVector),
			Data:          data,
			CreatedAt:     h.CreatedAt.UTC(),
		}, nil
	}
	return nil, fmt.Errorf("find snapshot of %q at or before %d: %w", docID, atOrBefore, database.ErrSnapshotNotFound)
}

// readParts reads and joins the compressed parts a header names.
func (db *DB) readParts(ctx context.Context, h *snapshotHeader) ([]byte, error) {
	if h.PackedLen < 0 || h.Parts < 0 {
		return nil, fmt.Errorf("find snapshot %s: bad header: %w", h.ID, snapcodec.ErrCorrupt)
	}
	packed := make([]byte, 0, h.PackedLen)
	for i := range h.Parts {
		var part snapshotPart
		err := db.snapshotParts().FindOne(ctx, bson.D{{Key: "_id", Value: partID(h.DocID, h.ServerSeq, h.Nonce, i)}}).Decode(&part)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, fmt.Errorf("find snapshot %s: part %d of %d: %w", h.ID, i+1, h.Parts, errPartGone)
		}
		if err != nil {
			return nil, wrapErr("find snapshot: read part", err)
		}
		packed = append(packed, part.Data...)
	}
	if int64(len(packed)) != h.PackedLen {
		return nil, fmt.Errorf("find snapshot %s: parts hold %d bytes, header says %d: %w", h.ID, len(packed), h.PackedLen, snapcodec.ErrCorrupt)
	}
	return packed, nil
}
