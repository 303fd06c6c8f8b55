package mongo

// Imports: records brought over from another database (yorkie migrate)
// keep the IDs they had there, so they are written with those IDs rather
// than created. Every write is an upsert keyed by _id that changes nothing
// when the stored record is already the one given, so an import can be run
// again, after a crash or to catch up, and reports what it changed.
//
// A document is made visible by its key record, written last
// (PublishImportedDocument): until then an import that stopped half way
// left a document no client finds by key, which the next run completes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/snapcodec"
)

// Sentinel errors of imports.
var (
	// ErrImportConflict: the target holds another record with a value the
	// imported one must own alone (a project key or name, a username, a
	// document key).
	ErrImportConflict = errors.New("taken by another record in the target")
	// ErrImportDiverged: the target's copy of a document went on without
	// the source (this server wrote changes to it after the import).
	ErrImportDiverged = errors.New("changed in the target since the import")
)

// importedBatch marks the change batches an import wrote.
const importedBatch = -1

// ImportMark is what an import records on a document once it is complete:
// the state of the source it copied. An import that finds the source in
// the same state has nothing to do for the document.
type ImportMark struct {
	SourceServerSeq int64     `bson:"source_server_seq"`
	SourceUpdatedAt time.Time `bson:"source_updated_at"`
	SourceRemoved   bool      `bson:"source_removed"`
}

// upsertRaw replaces the record with the _id by doc unless it is stored
// already: with the same source mark when mark is set (the record may have
// changed here since, which stays), byte for byte otherwise. It reports
// whether it wrote.
func upsertRaw(ctx context.Context, col *mongo.Collection, id any, doc bson.D, mark string) (bool, error) {
	if mark != "" {
		doc = append(doc, bson.E{Key: "import_source", Value: mark})
	}
	want, err := bson.Marshal(doc)
	if err != nil {
		return false, fmt.Errorf("encode %s record %v: %w", col.Name(), id, err)
	}
	stored, err := col.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, wrapErr(fmt.Sprintf("read %s record %v", col.Name(), id), err)
	}
	if err == nil {
		if mark != "" {
			if v, ok := stored.Lookup("import_source").StringValueOK(); ok && v == mark {
				return false, nil
			}
		} else if bytes.Equal(stored, want) {
			return false, nil
		}
	}
	if _, err := col.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.Raw(want), options.Replace().SetUpsert(true)); err != nil {
		return false, wrapErr(fmt.Sprintf("write %s record %v", col.Name(), id), err)
	}
	return true, nil
}

// toD turns a record struct into a document that extra fields follow.
func toD(rec any, extra bson.D) (bson.D, error) {
	raw, err := bson.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return append(d, extra...), nil
}

// ImportProject stores p with its ID, keys and settings. mark names the source record's state: a
// project imported from it before is left as it is. ErrImportConflict if
// another project has one of its keys or the owner's project of that name.
func (db *DB) ImportProject(ctx context.Context, p *database.ProjectInfo, mark string) (bool, error) {
	r, err := projectRecordOf(p)
	if err != nil {
		return false, fmt.Errorf("import project %s: %w", p.ID, err)
	}
	r.CreatedAt, r.UpdatedAt = ms(r.CreatedAt), ms(r.UpdatedAt)
	col := db.db.Collection(colProjects)
	for _, c := range []struct {
		what   string
		filter bson.M
	}{
		{"public key " + p.PublicKey, bson.M{"public_key": p.PublicKey}},
		{"secret key " + p.SecretKey, bson.M{"secret_key": p.SecretKey}},
		{"name " + p.Name, bson.M{"owner": p.Owner, "name": p.Name}},
	} {
		var other projectRecord
		err := col.FindOne(ctx, c.filter).Decode(&other)
		if err == nil && other.ID != r.ID {
			return false, fmt.Errorf("import project %s (%s): %s belongs to project %s (%s): %w",
				p.ID, p.Name, c.what, other.ID.Hex(), other.Name, ErrImportConflict)
		}
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return false, wrapErr("import project", err)
		}
	}
	d, err := toD(r, nil)
	if err != nil {
		return false, fmt.Errorf("import project %s: %w", p.ID, err)
	}
	return upsertRaw(ctx, col, r.ID, d, mark)
}

// ImportUser stores u with its ID and password hash; mark as ImportProject.
// ErrImportConflict if another user has the name.
func (db *DB) ImportUser(ctx context.Context, u *database.UserInfo, mark string) (bool, error) {
	id, err := primitive.ObjectIDFromHex(u.ID)
	if err != nil {
		return false, fmt.Errorf("import user %q: %w", u.Username, err)
	}
	col := db.db.Collection(colUsers)
	var other userRecord
	err = col.FindOne(ctx, bson.M{"username": u.Username}).Decode(&other)
	if err == nil && other.ID != id {
		return false, fmt.Errorf("import user %s (%s): the name belongs to user %s: %w", u.ID, u.Username, other.ID.Hex(), ErrImportConflict)
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, wrapErr("import user", err)
	}
	d, err := toD(&userRecord{ID: id, Username: u.Username, HashedPassword: u.HashedPassword, CreatedAt: ms(u.CreatedAt)}, nil)
	if err != nil {
		return false, fmt.Errorf("import user %s: %w", u.ID, err)
	}
	return upsertRaw(ctx, col, id, d, mark)
}

// ImportClient stores c with its ID, key, status and times, and the time
// of the source's record it copied (see ClientImported).
func (db *DB) ImportClient(ctx context.Context, c *database.ClientInfo, sourceUpdatedAt time.Time) (bool, error) {
	id, err := primitive.ObjectIDFromHex(c.ID)
	if err != nil {
		return false, fmt.Errorf("import client %q: %w", c.ID, err)
	}
	d, err := toD(&clientRecord{
		ID: id, ProjectID: c.ProjectID, Key: c.Key, Metadata: toList(c.Metadata, newPair),
		Status: string(c.Status), CreatedAt: ms(c.CreatedAt), UpdatedAt: ms(c.UpdatedAt),
	}, bson.D{{Key: "import", Value: bson.D{{Key: "source_updated_at", Value: ms(sourceUpdatedAt)}}}})
	if err != nil {
		return false, fmt.Errorf("import client %s: %w", c.ID, err)
	}
	return upsertRaw(ctx, db.clients, id, d, "")
}

// ImportAttachment stores a client's attachment to an imported document.
func (db *DB) ImportAttachment(ctx context.Context, a *database.Attachment) (bool, error) {
	rec := toAttachmentRecord(a)
	d, err := toD(rec, nil)
	if err != nil {
		return false, fmt.Errorf("import attachment %s: %w", rec.ID, err)
	}
	return upsertRaw(ctx, db.attachments, rec.ID, d, "")
}

// ImportedDocument returns the head of the document's change log in this
// database (0 if it has none).
func (db *DB) ImportedDocument(ctx context.Context, docID string) (int64, error) {
	id, err := primitive.ObjectIDFromHex(docID)
	if err != nil {
		return 0, fmt.Errorf("imported document %q: %w", docID, err)
	}
	var rec struct {
		HeadHint int64 `bson:"head_hint"`
	}
	err = db.documents.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&rec)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, wrapErr("imported document", err)
	}
	head, err := db.head(ctx, docID, rec.HeadHint)
	if err != nil {
		return 0, fmt.Errorf("imported document %s: %w", docID, err)
	}
	return head, nil
}

// ImportChanges appends changes to the document's log, which must end right
// before the first of them, as batches of consecutive server_seq values:
// the caller keeps the head (ImportedDocument tells it where a run starts),
// and a batch that starts where one is stored already is refused
// (ErrImportDiverged). The document record need not exist yet. Batches are
// written in order, each by one insert, so an import that stops leaves a
// log that a later call extends from its head.
func (db *DB) ImportChanges(ctx context.Context, docID string, changes []*ImportedChange) error {
	if len(changes) == 0 {
		return nil
	}
	first := changes[0].ServerSeq
	var batches []any
	var rec *batchRecord
	size := 0
	flush := func() {
		if rec != nil {
			batches = append(batches, rec)
		}
		rec, size = nil, 0
	}
	for i, c := range changes {
		if c.ServerSeq != first+int64(i) {
			return fmt.Errorf("import changes of %s: server_seq %d does not follow %d", docID, c.ServerSeq, first+int64(i)-1)
		}
		body := c.Body
		// Batches stay well under the 16 MB record limit.
		if rec != nil && (size+len(body) > importBatchBytes || len(rec.Changes) >= importBatchChanges) {
			flush()
		}
		if rec == nil {
			rec = &batchRecord{
				ID: batchID(docID, c.ServerSeq), DocID: docID, ServerSeq: c.ServerSeq, Epoch: importedBatch,
				Nonce: primitive.NewObjectID(), CreatedAt: now(),
			}
		}
		rec.LastSeq = c.ServerSeq
		rec.Changes = append(rec.Changes, changeRecord{ActorID: c.ActorID, ClientSeq: int64(c.ClientSeq), Body: body})
		if !containsString(rec.Actors, c.ActorID) {
			rec.Actors = append(rec.Actors, c.ActorID)
		}
		size += len(body)
	}
	flush()
	if _, err := db.changes.InsertMany(ctx, batches, options.InsertMany().SetOrdered(true)); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return db.importChangesAgain(ctx, docID, changes)
		}
		return wrapErr(fmt.Sprintf("import changes of %s", docID), err)
	}
	return nil
}

// importChangesAgain resolves a batch found stored where ImportChanges
// was to write: an import killed just before may have had its last writes
// land after this run read where the log ended (the server applies what it
// received). If the batch is an import's, the log's head is looked up and
// what is beyond it is written; the same source gives the same changes. A
// batch this server wrote is ErrImportDiverged.
func (db *DB) importChangesAgain(ctx context.Context, docID string, changes []*ImportedChange) error {
	first := changes[0].ServerSeq
	b, err := db.batchAt(ctx, docID, first, options.FindOne().SetProjection(bson.D{{Key: "epoch", Value: 1}}))
	if err != nil {
		return fmt.Errorf("import changes of %s: %w", docID, err)
	}
	if b != nil && b.Epoch != importedBatch {
		return fmt.Errorf("import changes of %s from %d: the log has them: %w", docID, first, ErrImportDiverged)
	}
	head, err := db.head(ctx, docID, first-1)
	if err != nil {
		return fmt.Errorf("import changes of %s: %w", docID, err)
	}
	rest := changes[min(max(head-first+1, 0), int64(len(changes))):]
	if head < first-1 || (len(rest) > 0 && len(rest) == len(changes)) {
		return fmt.Errorf("import changes of %s from %d: the log ends at %d: %w", docID, first, head, ErrImportDiverged)
	}
	if len(rest) == 0 {
		return nil
	}
	return db.ImportChanges(ctx, docID, rest)
}

// ImportedChange is a change to import, its body encoded (protobuf
// api.Change): an import holds many, and the encoding is a fraction of
// the decoded change's memory.
type ImportedChange struct {
	ServerSeq int64
	ActorID   string
	ClientSeq uint32
	Body      []byte
}

// Bounds of one imported batch.
const (
	importBatchBytes   = 4 << 20
	importBatchChanges = 1000
)

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// PrepareImportedDocument writes the document record (ID, project, key,
// times, removal, schema), with no import mark and no key record: the document is
// not found by key until PublishImportedDocument. head is the end of its
// log in this database.
func (db *DB) PrepareImportedDocument(ctx context.Context, d *database.DocInfo, head int64) error {
	id, err := primitive.ObjectIDFromHex(d.ID)
	if err != nil {
		return fmt.Errorf("import document %q: %w", d.ID, err)
	}
	rec := &docRecord{ID: id, ProjectID: d.ProjectID, Key: d.Key, CreatedAt: ms(d.CreatedAt), HeadHint: head, Schema: d.Schema}
	if !d.RemovedAt.IsZero() {
		t := ms(d.RemovedAt)
		rec.RemovedAt = &t
	}
	doc, err := toD(rec, nil)
	if err != nil {
		return fmt.Errorf("import document %s: %w", d.ID, err)
	}
	if _, err := upsertRaw(ctx, db.documents, id, doc, ""); err != nil {
		return fmt.Errorf("import document %s (%s): %w", d.ID, d.Key, err)
	}
	return nil
}

// PublishImportedDocument completes a document's import: a live document
// gets its key record (ErrImportConflict if the key names another live
// document), a removed one loses it, and the document records mark.
func (db *DB) PublishImportedDocument(ctx context.Context, d *database.DocInfo, mark *ImportMark) error {
	id, err := primitive.ObjectIDFromHex(d.ID)
	if err != nil {
		return fmt.Errorf("import document %q: %w", d.ID, err)
	}
	keyID := keyRecordID(d.ProjectID, d.Key)
	if d.RemovedAt.IsZero() {
		_, err := db.docKeys.InsertOne(ctx, &keyRecord{Key: keyID, DocID: id})
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return wrapErr(fmt.Sprintf("import document %s: key record", d.ID), err)
		}
		if err != nil {
			var kr keyRecord
			if err := db.docKeys.FindOne(ctx, bson.D{{Key: "_id", Value: keyID}}).Decode(&kr); err != nil {
				return wrapErr(fmt.Sprintf("import document %s: key record", d.ID), err)
			}
			if kr.DocID != id {
				return fmt.Errorf("import document %s: key %q of project %s names document %s: %w",
					d.ID, d.Key, d.ProjectID, kr.DocID.Hex(), ErrImportConflict)
			}
		}
	} else if _, err := db.docKeys.DeleteOne(ctx, bson.D{{Key: "_id", Value: keyID}, {Key: "doc_id", Value: id}}); err != nil {
		return wrapErr(fmt.Sprintf("import document %s: release key", d.ID), err)
	}
	m := *mark
	m.SourceUpdatedAt = ms(m.SourceUpdatedAt)
	if _, err := db.documents.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "import", Value: &m}}}}); err != nil {
		return wrapErr(fmt.Sprintf("import document %s: mark", d.ID), err)
	}
	return nil
}

// ms cuts t to the millisecond precision of BSON dates, in UTC.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// ImportMarks returns the import mark of every document that has one, by
// document ID: what a catch-up compares with the source in one read.
func (db *DB) ImportMarks(ctx context.Context) (map[string]ImportMark, error) {
	cur, err := db.documents.Find(ctx, bson.D{{Key: "import", Value: bson.D{{Key: "$exists", Value: true}}}},
		options.Find().SetProjection(bson.D{{Key: "import", Value: 1}}))
	if err != nil {
		return nil, wrapErr("read import marks", err)
	}
	var recs []struct {
		ID   primitive.ObjectID `bson:"_id"`
		Mark ImportMark         `bson:"import"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr("read import marks", err)
	}
	out := make(map[string]ImportMark, len(recs))
	for _, r := range recs {
		r.Mark.SourceUpdatedAt = r.Mark.SourceUpdatedAt.UTC()
		out[r.ID.Hex()] = r.Mark
	}
	return out, nil
}

// ImportedClients returns, by client ID, the time of the source record
// every imported client was copied from (see ClientImported).
func (db *DB) ImportedClients(ctx context.Context) (map[string]time.Time, error) {
	cur, err := db.clients.Find(ctx, bson.D{{Key: "import", Value: bson.D{{Key: "$exists", Value: true}}}},
		options.Find().SetProjection(bson.D{{Key: "import", Value: 1}}))
	if err != nil {
		return nil, wrapErr("read imported clients", err)
	}
	var recs []struct {
		ID     primitive.ObjectID `bson:"_id"`
		Import struct {
			SourceUpdatedAt time.Time `bson:"source_updated_at"`
		} `bson:"import"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr("read imported clients", err)
	}
	out := make(map[string]time.Time, len(recs))
	for _, r := range recs {
		out[r.ID.Hex()] = r.Import.SourceUpdatedAt.UTC()
	}
	return out, nil
}

// ImportSchema stores s with its ID; mark as ImportProject.
// ErrImportConflict if another schema of the project has its name and
// version.
func (db *DB) ImportSchema(ctx context.Context, s *database.SchemaInfo, mark string) (bool, error) {
	id, err := primitive.ObjectIDFromHex(s.ID)
	if err != nil {
		return false, fmt.Errorf("import schema %q: %w", s.ID, err)
	}
	col := db.db.Collection(colSchemas)
	var other schemaRecord
	err = col.FindOne(ctx, bson.D{{Key: "project_id", Value: s.ProjectID}, {Key: "name", Value: s.Name}, {Key: "version", Value: s.Version}}).Decode(&other)
	if err == nil && other.ID != id {
		return false, fmt.Errorf("import schema %s (%s): the key belongs to schema %s: %w", s.ID, s.Key(), other.ID.Hex(), ErrImportConflict)
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, wrapErr("import schema", err)
	}
	r := &schemaRecord{
		ID: id, ProjectID: s.ProjectID, Name: s.Name, Version: s.Version, Body: s.Body,
		Rules: make([]ruleRecord, len(s.Rules)), CreatedAt: ms(s.CreatedAt),
	}
	for i, rule := range s.Rules {
		r.Rules[i] = ruleRecord{Path: rule.Path, Type: rule.Type}
		for _, n := range rule.TreeNodes {
			r.Rules[i].TreeNodes = append(r.Rules[i].TreeNodes, treeNodeRecord(n))
		}
	}
	d, err := toD(r, nil)
	if err != nil {
		return false, fmt.Errorf("import schema %s: %w", s.ID, err)
	}
	return upsertRaw(ctx, col, id, d, mark)
}

// ImportRevision stores r with its ID and server_seq; mark as
// ImportProject.
func (db *DB) ImportRevision(ctx context.Context, r *database.Revision, mark string) (bool, error) {
	id, err := primitive.ObjectIDFromHex(r.ID)
	if err != nil {
		return false, fmt.Errorf("import revision %q: %w", r.ID, err)
	}
	packed, err := db.revs.codec.Compress(r.Content)
	if err != nil {
		return false, fmt.Errorf("import revision %s: %w", r.ID, err)
	}
	d, err := toD(&revisionRecord{
		ID: id, ProjectID: r.ProjectID, DocID: r.DocID, Label: r.Label, Description: r.Description,
		Snapshot: r.Snapshot, Content: packed, ContentLen: int64(len(r.Content)), ServerSeq: r.ServerSeq,
		CreatedAt: ms(r.CreatedAt),
	}, nil)
	if err != nil {
		return false, fmt.Errorf("import revision %s: %w", r.ID, err)
	}
	return upsertRaw(ctx, db.revisions(), id, d, mark)
}

// ImportSources returns the source mark of every record of the collection
// an import wrote with one, by _id (hex): what a run compares with the
// source before it does the work of importing a record again.
func (db *DB) ImportSources(ctx context.Context, collection string) (map[string]string, error) {
	cur, err := db.db.Collection(collection).Find(ctx, bson.D{{Key: "import_source", Value: bson.D{{Key: "$exists", Value: true}}}},
		options.Find().SetProjection(bson.D{{Key: "import_source", Value: 1}}))
	if err != nil {
		return nil, wrapErr("read import sources of "+collection, err)
	}
	var recs []struct {
		ID     primitive.ObjectID `bson:"_id"`
		Source string             `bson:"import_source"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		return nil, wrapErr("read import sources of "+collection, err)
	}
	out := make(map[string]string, len(recs))
	for _, r := range recs {
		out[r.ID.Hex()] = r.Source
	}
	return out, nil
}

// ImportInvite stores inv under its token digest; mark as ImportProject.
// An invite whose digest the target holds for another project is
// ErrImportConflict.
func (db *DB) ImportInvite(ctx context.Context, inv *database.InviteInfo, mark string) (bool, error) {
	col := db.db.Collection(colInvites)
	var other inviteRecord
	err := col.FindOne(ctx, bson.D{{Key: "_id", Value: inv.TokenHash}}).Decode(&other)
	if err == nil && other.ProjectID != inv.ProjectID {
		return false, fmt.Errorf("import invite to project %s: its token is an invite to project %s: %w", inv.ProjectID, other.ProjectID, ErrImportConflict)
	}
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, wrapErr("import invite", err)
	}
	d, err := toD(&inviteRecord{
		TokenHash: inv.TokenHash, ProjectID: inv.ProjectID, Role: string(inv.Role),
		CreatedBy: inv.CreatedBy, CreatedAt: ms(inv.CreatedAt), ExpiresAt: ms(inv.ExpiresAt),
	}, nil)
	if err != nil {
		return false, fmt.Errorf("import invite to project %s: %w", inv.ProjectID, err)
	}
	return upsertRaw(ctx, col, inv.TokenHash, d, mark)
}

// DiscardImportedChanges deletes the batches an import appended to the
// document's log after server_seq after, so that a run can write them
// again. Batches this server wrote are left alone.
func (db *DB) DiscardImportedChanges(ctx context.Context, docID string, after int64) error {
	for seq := after + 1; ; {
		b, err := db.batchAt(ctx, docID, seq, options.FindOne().SetProjection(bson.D{
			{Key: "server_seq", Value: 1}, {Key: "last_seq", Value: 1}, {Key: "epoch", Value: 1},
		}))
		if err != nil {
			return fmt.Errorf("discard imported changes of %s: %w", docID, err)
		}
		if b == nil {
			return nil
		}
		if b.Epoch != importedBatch {
			return fmt.Errorf("discard imported changes of %s: batch at %d is not an import's: %w", docID, seq, ErrImportDiverged)
		}
		if _, err := db.changes.DeleteOne(ctx, bson.D{{Key: "_id", Value: b.ID}}); err != nil {
			return wrapErr(fmt.Sprintf("discard imported changes of %s", docID), err)
		}
		seq = b.LastSeq + 1
	}
}

// ImportStarts tells a run where each document's import stands in one
// read of the documents and one of the change batches' bounds, instead of
// a few lookups per document (a MongoDB-wire server without an index on
// those lookups reads the whole change log for each): recorded holds the
// documents that have a record here, heads the end of each document's log
// as its batches from server_seq 1 tell it. A compacted document has no
// entry in heads: ImportedDocument tells its head.
func (db *DB) ImportStarts(ctx context.Context) (recorded map[string]bool, heads map[string]int64, err error) {
	cur, err := db.documents.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{
		{Key: "_id", Value: 1}, {Key: "doc_epoch", Value: 1}, {Key: "compacted_seq", Value: 1},
	}))
	if err != nil {
		return nil, nil, wrapErr("read import starts", err)
	}
	var docs []docRecord
	if err := cur.All(ctx, &docs); err != nil {
		return nil, nil, wrapErr("read import starts", err)
	}
	recorded = make(map[string]bool, len(docs))
	unsure := map[string]bool{}
	for _, d := range docs {
		recorded[d.ID.Hex()] = true
		if d.DocEpoch != 0 || d.CompactedSeq != 0 {
			unsure[d.ID.Hex()] = true
		}
	}
	cur, err = db.changes.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{
		{Key: "doc_id", Value: 1}, {Key: "server_seq", Value: 1}, {Key: "last_seq", Value: 1}, {Key: "doc_epoch", Value: 1},
	}))
	if err != nil {
		return nil, nil, wrapErr("read import starts", err)
	}
	var batches []batchRecord
	if err := cur.All(ctx, &batches); err != nil {
		return nil, nil, wrapErr("read import starts", err)
	}
	byDoc := map[string][]batchRecord{}
	for _, b := range batches {
		if b.DocEpoch != 0 {
			unsure[b.DocID] = true
		}
		byDoc[b.DocID] = append(byDoc[b.DocID], b)
	}
	heads = make(map[string]int64, len(byDoc))
	for doc, bs := range byDoc {
		if unsure[doc] {
			continue
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].ServerSeq < bs[j].ServerSeq })
		var head int64
		for _, b := range bs {
			if b.ServerSeq != head+1 {
				break
			}
			head = b.LastSeq
		}
		heads[doc] = head
	}
	return recorded, heads, nil
}

// ImportSnapshot stores s as a snapshot of a document an import is
// bringing over, in a few writes: the fence, head and tidy steps of
// SaveSnapshot guard against readers and writers of a live document, and
// the cutover has none. A snapshot of that server_seq stored already (by
// an earlier run) stays. It reports whether it wrote.
func (db *DB) ImportSnapshot(ctx context.Context, docID string, s *database.Snapshot) (bool, error) {
	existing, err := db.headerByID(ctx, snapshotID(docID, s.ServerSeq))
	if err != nil {
		return false, fmt.Errorf("import snapshot: %w", err)
	}
	if existing != nil {
		return false, nil
	}
	packed, err := db.snaps.codec.Compress(s.Data)
	if err != nil {
		return false, fmt.Errorf("import snapshot of %q at %d: %w", docID, s.ServerSeq, err)
	}
	nonce := primitive.NewObjectID()
	n := (len(packed) + snapshotPartSize - 1) / snapshotPartSize
	// Registered first, as SaveSnapshot does, so that parts an import
	// stopping half way leaves are collected.
	pending := &pendingParts{
		ID: pendingID(docID, s.ServerSeq, nonce), DocID: docID, ServerSeq: s.ServerSeq,
		Nonce: nonce, Parts: n, Since: now(),
	}
	if _, err := db.snapshotPending().InsertOne(ctx, pending); err != nil {
		return false, wrapErr("import snapshot: register upload", err)
	}
	parts := make([]any, n)
	for i := range parts {
		parts[i] = &snapshotPart{
			ID:   partID(docID, s.ServerSeq, nonce, i),
			Data: packed[i*snapshotPartSize : min((i+1)*snapshotPartSize, len(packed))],
		}
	}
	if _, err := db.snapshotParts().InsertMany(ctx, parts); err != nil {
		return false, wrapErr(fmt.Sprintf("import snapshot of %q at %d: parts", docID, s.ServerSeq), err)
	}
	header := &snapshotHeader{
		ID: snapshotID(docID, s.ServerSeq), DocID: docID, ServerSeq: s.ServerSeq, Lamport: s.Lamport,
		VersionVector: toList(s.VersionVector, newLamport), Nonce: nonce, Parts: n,
		PackedLen: int64(len(packed)), RawLen: int64(len(s.Data)), Codec: snapcodec.Name, CreatedAt: now(),
	}
	if _, err := db.snapshotHeaders().InsertOne(ctx, header); err != nil {
		return false, wrapErr(fmt.Sprintf("import snapshot of %q at %d: publish", docID, s.ServerSeq), err)
	}
	if _, err := db.snapshotPending().DeleteOne(ctx, bson.D{{Key: "_id", Value: pending.ID}}); err != nil {
		// Left pending, it is found published and dropped later.
		db.log.Debug("drop pending record of an imported snapshot", "doc_id", docID, "err", err)
	}
	return true, nil
}
