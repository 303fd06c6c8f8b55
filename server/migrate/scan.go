package migrate

// Reading the source's changes and snapshots in one pass each rather than
// one query per document: a MongoDB-wire server without upstream's indexes
// (FerretDB pushes no filter down) would read the whole collection for
// every document.

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// fewDocuments is up to how many documents a pass asks the source for
// their rows only (one index lookup each on MongoDB); beyond, it reads the
// whole collection and keeps the rows of the documents under way.
const fewDocuments = 16

// maxHeldBytes bounds the source rows of changes a pass holds, converted,
// before it writes them.
const maxHeldBytes = 32 << 20

// docWork is a document under way in a run.
type docWork struct {
	d *upDocument
	// head is the end of its log in the target when the run began.
	head int64
	w    *logWriter
	// err is why the document failed; unordered that the source returned
	// its changes out of server_seq order, so it is read again by itself.
	err       error
	unordered bool
	snaps     []*upSnapshot
}

// scanFilter is the filter of a pass over a collection for the documents,
// each from server_seq after (nil: from the start).
func scanFilter(docs []*docWork, after func(*docWork) int64) bson.D {
	if len(docs) > fewDocuments {
		return bson.D{}
	}
	clauses := make(bson.A, 0, len(docs))
	for _, w := range docs {
		c := bson.D{{Key: "doc_id", Value: w.d.ID}, {Key: "project_id", Value: w.d.ProjectID}}
		if after != nil {
			c = append(c, bson.E{Key: "server_seq", Value: bson.D{{Key: "$gt", Value: after(w)}}})
		}
		clauses = append(clauses, c)
	}
	return bson.D{{Key: "$or", Value: clauses}}
}

// copyChanges reads the changes of the documents past their heads in one
// pass, in the order the source stores them (a document's changes in
// server_seq order, as upstream inserts them), and appends them to the
// target's logs. A document whose change does not decode fails; one whose
// changes come out of order is marked to be read again by itself.
func (im *Importer) copyChanges(ctx context.Context, docs []*docWork, prog *progress) error {
	byID := make(map[primitive.ObjectID]*docWork, len(docs))
	for _, w := range docs {
		byID[w.d.ID] = w
	}
	held := 0
	flushAll := func() error {
		held = 0
		return parallel(ctx, docs, func(_ int, w *docWork) {
			if w.err != nil || w.unordered {
				return
			}
			if err := w.w.flush(ctx); err != nil {
				w.err = err
			}
		})
	}
	err := each(ctx, im.src.Collection("changes"), scanFilter(docs, func(w *docWork) int64 { return w.head }), nil,
		func(c *upChange, raw bson.Raw) error {
			docID, _ := raw.Lookup("doc_id").ObjectIDOK()
			w := byID[docID]
			if w == nil || w.err != nil || w.unordered || c.ServerSeq <= w.head || c.ServerSeq > w.d.ServerSeq {
				return nil
			}
			if projectID, _ := raw.Lookup("project_id").ObjectIDOK(); projectID != w.d.ProjectID {
				return nil
			}
			if c.ServerSeq < w.w.next {
				w.unordered = true
				return nil
			}
			ch, err := c.change()
			if err != nil {
				w.err = fmt.Errorf("change %s (server_seq %d): %w", c.ID.Hex(), c.ServerSeq, err)
				return nil
			}
			if err := w.w.add(ctx, ch); err != nil {
				w.err = err
				return nil
			}
			held += len(raw)
			if held > maxHeldBytes {
				return flushAll()
			}
			return nil
		})
	if err != nil {
		return err
	}
	return flushAll()
}

// readSnapshotHeads finds, in one pass over the source's snapshots without
// their bodies, the newest one of every document up to its head: all a
// reader here starts from (older ones would cost a save each, which is a
// dozen round trips).
func (im *Importer) readSnapshotHeads(ctx context.Context, docs []*docWork) error {
	byID := make(map[primitive.ObjectID]*docWork, len(docs))
	for _, w := range docs {
		byID[w.d.ID] = w
	}
	cur, err := im.src.Collection("snapshots").Find(ctx, scanFilter(docs, nil),
		options.Find().SetProjection(bson.D{{Key: "snapshot", Value: 0}}))
	if err != nil {
		return fmt.Errorf("read snapshots: %w", err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	for cur.Next(ctx) {
		var s upSnapshot
		if err := cur.Decode(&s); err != nil {
			return fmt.Errorf("snapshots row %v: %w: %w", cur.Current.Lookup("_id"), ErrAnotherLayout, err)
		}
		w := byID[s.DocID]
		if w == nil || s.ProjectID != w.d.ProjectID || s.ServerSeq > w.d.ServerSeq {
			continue
		}
		if len(w.snaps) == 0 || s.ServerSeq > w.snaps[0].ServerSeq {
			w.snaps = []*upSnapshot{&s}
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("read snapshots: %w", err)
	}
	return nil
}

// loadSnapshots reads the bodies of the document's snapshots found by
// readSnapshotHeads, each by its ID, and decodes them.
func (im *Importer) loadSnapshots(ctx context.Context, w *docWork) ([]*database.Snapshot, error) {
	out := make([]*database.Snapshot, 0, len(w.snaps))
	for _, head := range w.snaps {
		var s upSnapshot
		if err := im.src.Collection("snapshots").FindOne(ctx, bson.D{{Key: "_id", Value: head.ID}}).Decode(&s); err != nil {
			return nil, fmt.Errorf("snapshot %s (server_seq %d): %w", head.ID.Hex(), head.ServerSeq, err)
		}
		snap, err := s.snapshot(ctx, im.src)
		if err != nil {
			return nil, fmt.Errorf("snapshot %s (server_seq %d): %w", s.ID.Hex(), s.ServerSeq, err)
		}
		out = append(out, snap)
	}
	return out, nil
}
