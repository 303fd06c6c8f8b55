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

// colRevisions holds one record per revision, with upstream's field names
// for the ones upstream has. _id rises in creation order (ClientIDs), so
// paging sorts by it.
const colRevisions = "revisions"

// revisionRecord is a revision at rest. Content is compressed.
type revisionRecord struct {
	ID          primitive.ObjectID `bson:"_id"`
	ProjectID   string             `bson:"project_id"`
	DocID       string             `bson:"doc_id"`
	Label       string             `bson:"label"`
	Description string             `bson:"description"`
	Snapshot    []byte             `bson:"snapshot"`
	Content     []byte             `bson:"content,omitempty"`
	ContentLen  int64              `bson:"content_len"`
	ServerSeq   int64              `bson:"server_seq"`
	CreatedAt   time.Time          `bson:"created_at"`
}

func (db *DB) revisions() *mongo.Collection { return db.db.Collection(colRevisions) }

// ensureRevisionIndexes creates the index paging reads with.
func (db *DB) ensureRevisionIndexes(ctx context.Context) error {
	col := db.revisions()
	const name = "project_doc_id"
	if db.hasIndex(ctx, col, name) {
		return nil
	}
	model := mongo.IndexModel{
		Keys:    bson.D{{Key: "project_id", Value: 1}, {Key: "doc_id", Value: 1}, {Key: "_id", Value: 1}},
		Options: options.Index().SetName(name),
	}
	if _, err := col.Indexes().CreateOne(ctx, model); err != nil && !db.hasIndex(ctx, col, name) {
		return wrapErr(fmt.Sprintf("mongo: create index %s of %s", name, colRevisions), err)
	}
	return nil
}

// CreateRevision implements database.Revisions. The fence is checked before
// the insert: as with AppendChanges, a revision that passed it just before a
// newer claim may still land, which is harmless since it only restates the
// log up to its server_seq.
func (db *DB) CreateRevision(ctx context.Context, epoch int64, r *database.Revision) (*database.Revision, error) {
	doc, err := db.loadDocHex(ctx, r.DocID)
	if err != nil {
		return nil, fmt.Errorf("create revision: %w", err)
	}
	if doc.ProjectID != r.ProjectID {
		return nil, fmt.Errorf("create revision: document %q of project %s: %w", r.DocID, r.ProjectID, database.ErrDocumentNotFound)
	}
	if _, err := db.checkFence(ctx, r.DocID, epoch); err != nil {
		return nil, fmt.Errorf("create revision: %w", err)
	}
	packed, err := db.revs.codec.Compress(r.Content)
	if err != nil {
		return nil, fmt.Errorf("create revision of %q: %w", r.DocID, err)
	}
	id, err := primitive.ObjectIDFromHex(db.clientIDs.Next())
	if err != nil {
		return nil, fmt.Errorf("create revision of %q: %w", r.DocID, err)
	}
	rec := &revisionRecord{
		ID:          id,
		ProjectID:   r.ProjectID,
		DocID:       r.DocID,
		Label:       r.Label,
		Description: r.Description,
		Snapshot:    r.Snapshot,
		Content:     packed,
		ContentLen:  int64(len(r.Content)),
		ServerSeq:   r.ServerSeq,
		CreatedAt:   now(),
	}
	if _, err := db.revisions().InsertOne(ctx, rec); err != nil {
		return nil, wrapErr(fmt.Sprintf("create revision of %q", r.DocID), err)
	}
	out := *r
	out.ID, out.CreatedAt = id.Hex(), rec.CreatedAt
	out.Snapshot = append([]byte(nil), r.Snapshot...)
	out.Content = append([]byte(nil), r.Content...)
	return &out, nil
}

// ListRevisions implements database.Revisions.
func (db *DB) ListRevisions(ctx context.Context, projectID, docID string, p database.RevisionPaging) ([]*database.Revision, error) {
	order := -1
	if p.Forward {
		order = 1
	}
	opts := options.Find().
		SetSort(bson.D{{Key: "_id", Value: order}}).
		SetProjection(bson.D{{Key: "snapshot", Value: 0}, {Key: "content", Value: 0}})
	if p.Offset > 0 {
		opts.SetSkip(int64(p.Offset))
	}
	if p.PageSize > 0 {
		opts.SetLimit(int64(p.PageSize))
	}
	cur, err := db.revisions().Find(ctx, bson.D{{Key: "project_id", Value: projectID}, {Key: "doc_id", Value: docID}}, opts)
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("list revisions of %q", docID), err)
	}
	var recs []*revisionRecord
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr(fmt.Sprintf("list revisions of %q", docID), err)
	}
	out := make([]*database.Revision, 0, len(recs))
	for _, rec := range recs {
		out = append(out, rec.revision(nil))
	}
	return out, nil
}

// FindRevision implements database.Revisions.
func (db *DB) FindRevision(ctx context.Context, projectID, docID, revisionID string) (*database.Revision, error) {
	notFound := fmt.Errorf("revision %q of document %q: %w", revisionID, docID, database.ErrRevisionNotFound)
	id, err := primitive.ObjectIDFromHex(revisionID)
	if err != nil {
		return nil, notFound
	}
	var rec revisionRecord
	err = db.revisions().FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&rec)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, notFound
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("find revision %q", revisionID), err)
	}
	if rec.ProjectID != projectID || rec.DocID != docID {
		return nil, notFound
	}
	var content []byte
	if len(rec.Content) > 0 {
		if content, err = db.revs.codec.Decompress(rec.Content, int(rec.ContentLen)); err != nil {
			return nil, fmt.Errorf("revision %q: content: %w", revisionID, err)
		}
	}
	return rec.revision(content), nil
}

func (rec *revisionRecord) revision(content []byte) *database.Revision {
	return &database.Revision{
		ID:          rec.ID.Hex(),
		ProjectID:   rec.ProjectID,
		DocID:       rec.DocID,
		Label:       rec.Label,
		Description: rec.Description,
		Snapshot:    rec.Snapshot,
		Content:     content,
		ServerSeq:   rec.ServerSeq,
		CreatedAt:   rec.CreatedAt,
	}
}
