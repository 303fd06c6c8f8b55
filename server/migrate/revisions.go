package migrate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// upRevision is a row of revisions: the document's content as YSON text,
// without the server_seq it was taken at.
type upRevision struct {
	ID          primitive.ObjectID `bson:"_id"`
	ProjectID   primitive.ObjectID `bson:"project_id"`
	DocID       primitive.ObjectID `bson:"doc_id"`
	Label       string             `bson:"label"`
	Description string             `bson:"description"`
	Snapshot    bson.RawValue      `bson:"snapshot"`
	CreatedAt   time.Time          `bson:"created_at"`
	mark        string
	yson        string
}

// autoRevisionSeq is the server_seq of an automatic revision, which
// upstream labels "snapshot-N" after the snapshot at N; 0 for others.
func autoRevisionSeq(label string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(label, "snapshot-"), 10, 64)
	if !strings.HasPrefix(label, "snapshot-") || err != nil || n < 1 {
		return 0
	}
	return n
}

// importRevisions imports the revisions of the documents imported. Upstream
// keeps a revision's content as YSON text only; this server also keeps the
// document's root at the revision's server_seq, which a restore builds its
// change from. That server_seq is the N of an automatic "snapshot-N"
// revision; for the others it is found by rebuilding the document from its
// log here until it reads as the revision's YSON.
func (im *Importer) importRevisions(ctx context.Context, r *Report, docs map[primitive.ObjectID]bool) error {
	done, err := im.cfg.Target.ImportSources(ctx, "revisions")
	if err != nil {
		return err
	}
	byDoc := map[primitive.ObjectID][]*upRevision{}
	var order []primitive.ObjectID
	err = each(ctx, im.src.Collection("revisions"), bson.D{}, byID, func(rev *upRevision, raw bson.Raw) error {
		r.Revisions++
		rev.mark = sourceMark(raw)
		if done[rev.ID.Hex()] == rev.mark || !docs[rev.DocID] {
			return nil
		}
		text, err := binaryOrString(rev.Snapshot)
		if err != nil {
			return fmt.Errorf("revision %s (%s): %w", rev.ID.Hex(), rev.Label, err)
		}
		rev.yson = text
		if byDoc[rev.DocID] == nil {
			order = append(order, rev.DocID)
		}
		byDoc[rev.DocID] = append(byDoc[rev.DocID], rev)
		return nil
	})
	if err != nil {
		return err
	}
	for _, docID := range order {
		if err := im.importDocRevisions(ctx, r, docID, byDoc[docID]); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			im.log.Error("revisions not imported", "document", docID.Hex(), "error", err)
			r.Failures = append(r.Failures, fmt.Errorf("revisions of document %s: %w", docID.Hex(), err))
		}
	}
	return nil
}

// binaryOrString returns the text of a Binary or String value.
func binaryOrString(v bson.RawValue) (string, error) {
	if s, ok := v.StringValueOK(); ok {
		return s, nil
	}
	b, err := binaryOf(v, "snapshot")
	return string(b), err
}

// importDocRevisions rebuilds the document once from its log, taking the
// content of each revision at its server_seq.
func (im *Importer) importDocRevisions(ctx context.Context, r *Report, docID primitive.ObjectID, revs []*upRevision) error {
	info, err := im.cfg.Target.ClaimDocument(ctx, docID.Hex(), 0)
	if err != nil {
		return err
	}
	pending := revs
	doc := document.New()
	take := func(seq int64) error {
		content, yson, err := doc.Revision()
		if err != nil {
			return err
		}
		kept := pending[:0]
		for _, rev := range pending {
			at := autoRevisionSeq(rev.Label)
			if (at > 0 && at == seq) || (at == 0 && yson == rev.yson) {
				w, err := im.cfg.Target.ImportRevision(ctx, &database.Revision{
					ID: rev.ID.Hex(), ProjectID: rev.ProjectID.Hex(), DocID: docID.Hex(),
					Label: rev.Label, Description: rev.Description, Snapshot: []byte(rev.yson),
					Content: content, ServerSeq: seq, CreatedAt: rev.CreatedAt,
				}, rev.mark)
				if err != nil {
					return fmt.Errorf("revision %s (%s): %w", rev.ID.Hex(), rev.Label, err)
				}
				r.count("revisions", w)
				continue
			}
			kept = append(kept, rev)
		}
		pending = kept
		return nil
	}
	if err := take(0); err != nil {
		return err
	}
	for lo := int64(1); lo <= info.ServerSeq && len(pending) > 0; lo += rebuildBatch {
		hi := min(lo+rebuildBatch-1, info.ServerSeq)
		changes, err := im.cfg.Target.FindChanges(ctx, docID.Hex(), lo, hi)
		if err != nil {
			return err
		}
		for _, c := range changes {
			if err := doc.ApplyChanges([]*api.Change{c.Body}); err != nil {
				return fmt.Errorf("change %d does not apply: %w", c.ServerSeq, err)
			}
			if len(pending) == 0 {
				break
			}
			if err := take(c.ServerSeq); err != nil {
				return err
			}
		}
	}
	for _, rev := range pending {
		r.Failures = append(r.Failures, fmt.Errorf("revision %s (%s) of document %s: no state of the document's log reads as its snapshot", rev.ID.Hex(), rev.Label, docID.Hex()))
	}
	return nil
}
