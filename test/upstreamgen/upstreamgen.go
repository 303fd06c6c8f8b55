// Package upstreamgen writes a database in upstream Yorkie 0.7.17's MongoDB
// layout directly, with bulk inserts: projects, users, documents, their
// changes (real operations: counter increases, text insertions, key sets),
// snapshots upstream would have written, clients attached at their
// checkpoints and their version vectors. It is what importer tests and the
// import figures run on when a database far larger than the recorded data
// set is needed.
package upstreamgen

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// Collections are the collections upstream 0.7.17 creates.
var Collections = []string{
	"clusternodes", "users", "projects", "members", "invites", "clients", "documents",
	"schemas", "changes", "snapshots", "versionvectors", "snapshot_bodies", "revisions",
}

// AdminPasswordHash is the bcrypt hash of "admin", the generated admin's
// password.
const AdminPasswordHash = "$2a$10$.6T9tX0UqfJoSeYf3MSjhOnGS3Jc1gAnRjxxiFOzoPYzlZakNpiui"

// Config says what to generate.
type Config struct {
	// Documents of the default project, each edited by one client.
	Documents int
	// ChangesPerDocument is each document's server_seq at the end.
	ChangesPerDocument int
	// PresenceEvery makes every n-th server_seq a presence-only change,
	// which upstream numbers but does not store; 0: none.
	PresenceEvery int
	// SnapshotInterval: a snapshot is written once a document's server_seq
	// is this far past its last snapshot (checked after each round, as
	// upstream checks after each push); 0: none.
	SnapshotInterval int64
	// Round is how many changes a document gets before the next document
	// gets its own: the documents' changes interleave in the collection as
	// concurrent editing interleaves them upstream. 0: 10.
	Round int
	// Batch is how many rows one insert carries; 0: 1000.
	Batch int
}

// Source is a generated database.
type Source struct {
	DB   *mongo.Database
	Docs []*Doc
	cfg  Config
	enc  *zstd.Encoder
	rows map[string][]any
}

// Doc is a generated document and the one client that edits it.
type Doc struct {
	ID, Actor primitive.ObjectID
	Key       string
	// Head is the document's server_seq; every change has lamport and
	// client_seq equal to its server_seq.
	Head     int64
	lastSnap int64
	doc      *document.Document
	// count and text are the creation tickets of the counter and the text.
	count, text *api.TimeTicket
}

// Generate creates upstream's collections and indexes in db and fills them.
func Generate(ctx context.Context, db *mongo.Database, cfg Config) (*Source, error) {
	if cfg.Round <= 0 {
		cfg.Round = 10
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		return nil, err
	}
	s := &Source{DB: db, cfg: cfg, enc: enc, rows: map[string][]any{}}
	if err := createCollections(ctx, db); err != nil {
		return nil, err
	}
	owner := primitive.NewObjectID()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.add(ctx, "users", bson.D{
		{Key: "_id", Value: owner}, {Key: "username", Value: "admin"},
		{Key: "hashed_password", Value: AdminPasswordHash}, {Key: "created_at", Value: now},
	}); err != nil {
		return nil, err
	}
	if err := s.add(ctx, "projects", bson.D{
		{Key: "_id", Value: primitive.NilObjectID}, {Key: "name", Value: "default"}, {Key: "owner", Value: owner},
		{Key: "public_key", Value: "generated-public"}, {Key: "secret_key", Value: "generated-secret"},
		{Key: "client_deactivate_threshold", Value: "24h"},
		{Key: "snapshot_interval", Value: cfg.SnapshotInterval}, {Key: "snapshot_threshold", Value: cfg.SnapshotInterval / 2},
		{Key: "created_at", Value: now},
	}); err != nil {
		return nil, err
	}
	for i := range cfg.Documents {
		s.Docs = append(s.Docs, &Doc{
			ID: primitive.NewObjectID(), Actor: primitive.NewObjectID(),
			Key: fmt.Sprintf("generated-%d", i), doc: document.New(),
		})
	}
	for left := cfg.ChangesPerDocument; left > 0; left -= cfg.Round {
		for _, d := range s.Docs {
			for range min(left, cfg.Round) {
				if err := s.change(ctx, d); err != nil {
					return nil, err
				}
			}
			if err := s.maybeSnapshot(ctx, d); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range s.Docs {
		for _, row := range []struct {
			col string
			doc bson.D
		}{
			{"documents", bson.D{
				{Key: "_id", Value: d.ID}, {Key: "project_id", Value: primitive.NilObjectID},
				{Key: "key", Value: d.Key}, {Key: "server_seq", Value: d.Head},
				{Key: "owner", Value: d.Actor}, {Key: "created_at", Value: now}, {Key: "updated_at", Value: now},
			}},
			{"clients", bson.D{
				{Key: "_id", Value: d.Actor}, {Key: "project_id", Value: primitive.NilObjectID},
				{Key: "key", Value: "client-" + d.Key}, {Key: "status", Value: "activated"},
				{Key: "documents", Value: bson.D{{Key: d.ID.Hex(), Value: clientDocInfo(d.Head)}}},
				{Key: "attached_docs", Value: bson.A{d.ID}},
				{Key: "created_at", Value: now}, {Key: "updated_at", Value: now},
			}},
			{"versionvectors", bson.D{
				{Key: "_id", Value: primitive.NewObjectID()}, {Key: "project_id", Value: primitive.NilObjectID},
				{Key: "doc_id", Value: d.ID}, {Key: "client_id", Value: d.Actor},
				{Key: "version_vector", Value: vector(d.Actor, d.Head)},
			}},
		} {
			if err := s.add(ctx, row.col, row.doc); err != nil {
				return nil, err
			}
		}
	}
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// createCollections creates upstream's collections and the indexes its
// reads of changes and snapshots use.
func createCollections(ctx context.Context, db *mongo.Database) error {
	for _, c := range Collections {
		if err := db.CreateCollection(ctx, c); err != nil {
			return fmt.Errorf("create %s: %w", c, err)
		}
	}
	for _, c := range []string{"changes", "snapshots"} {
		_, err := db.Collection(c).Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "doc_id", Value: 1}, {Key: "project_id", Value: 1}, {Key: "server_seq", Value: 1}},
			Options: options.Index().SetUnique(true).SetName("doc_id_project_id_server_seq"),
		})
		if err != nil {
			return fmt.Errorf("index %s: %w", c, err)
		}
	}
	return nil
}

func clientDocInfo(head int64) bson.D {
	return bson.D{
		{Key: "status", Value: "attached"}, {Key: "server_seq", Value: head},
		{Key: "client_seq", Value: head}, {Key: "epoch", Value: int64(0)},
	}
}

// add queues a row of col, inserting the queue once it is a batch.
func (s *Source) add(ctx context.Context, col string, row bson.D) error {
	s.rows[col] = append(s.rows[col], row)
	if len(s.rows[col]) < s.cfg.Batch {
		return nil
	}
	return s.insert(ctx, col)
}

func (s *Source) insert(ctx context.Context, col string) error {
	if len(s.rows[col]) == 0 {
		return nil
	}
	if _, err := s.DB.Collection(col).InsertMany(ctx, s.rows[col]); err != nil {
		return fmt.Errorf("insert %s: %w", col, err)
	}
	s.rows[col] = s.rows[col][:0]
	return nil
}

func (s *Source) flush(ctx context.Context) error {
	for _, c := range Collections {
		if err := s.insert(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func ticket(lamport int64, delimiter uint32, actor primitive.ObjectID) *api.TimeTicket {
	return &api.TimeTicket{Lamport: lamport, Delimiter: delimiter, ActorId: actor[:]}
}

func root() *api.TimeTicket { return &api.TimeTicket{ActorId: make([]byte, 12)} }

func setOp(key string, value *api.JSONElementSimple, at *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: root(), Key: key, Value: value, ExecutedAt: at,
	}}}
}

func int32Bytes(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// ops are the operations of d's change at seq: the first sets a title, a
// counter and a text; the others increase the counter, type into the text
// or set a key, in turn.
func (d *Doc) ops(seq int64) []*api.Operation {
	at := func(delim uint32) *api.TimeTicket { return ticket(seq, delim, d.Actor) }
	if seq == 1 {
		d.count, d.text = at(2), at(3)
		return []*api.Operation{
			setOp("title", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_STRING, CreatedAt: at(1), Value: []byte(d.Key)}, at(1)),
			setOp("count", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_INTEGER_CNT, CreatedAt: d.count, Value: int32Bytes(0)}, d.count),
			setOp("text", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_TEXT, CreatedAt: d.text}, d.text),
		}
	}
	switch seq % 3 {
	case 0:
		return []*api.Operation{{Body: &api.Operation_Increase_{Increase: &api.Operation_Increase{
			ParentCreatedAt: d.count, Value: &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_INTEGER, CreatedAt: at(1), Value: int32Bytes(1)},
			ExecutedAt: at(1),
		}}}}
	case 1:
		start := &api.TextNodePos{CreatedAt: root()}
		return []*api.Operation{{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
			ParentCreatedAt: d.text, From: start, To: start, Content: fmt.Sprintf("w%d ", seq), ExecutedAt: at(1),
		}}}}
	}
	return []*api.Operation{setOp(fmt.Sprintf("k%d", seq%16),
		&api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_STRING, CreatedAt: at(1), Value: fmt.Appendf(nil, "v%d", seq)}, at(1))}
}

// setOps is the operation of an appended change: it sets a key, which
// needs nothing of the document's state.
func (d *Doc) setOps(seq int64) []*api.Operation {
	at := ticket(seq, 1, d.Actor)
	return []*api.Operation{setOp(fmt.Sprintf("k%d", seq%16),
		&api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_STRING, CreatedAt: at, Value: fmt.Appendf(nil, "v%d", seq)}, at)}
}

// change gives d its next server_seq: a presence-only change (not stored)
// or a stored change with operations.
func (s *Source) change(ctx context.Context, d *Doc) error {
	d.Head++
	seq := d.Head
	if s.cfg.PresenceEvery > 0 && seq > 1 && seq%int64(s.cfg.PresenceEvery) == 0 {
		return nil
	}
	var ops []*api.Operation
	if d.doc != nil {
		ops = d.ops(seq)
	} else {
		ops = d.setOps(seq)
	}
	row, err := changeRow(d, seq, ops)
	if err != nil {
		return err
	}
	if d.doc != nil {
		err := d.doc.ApplyChanges([]*api.Change{{
			Id: &api.ChangeID{
				ClientSeq: uint32(seq), ServerSeq: seq, Lamport: seq, ActorId: d.Actor[:],
				VersionVector: &api.VersionVector{Vector: map[string]int64{vectorKey(d.Actor): seq}},
			},
			Operations: ops,
		}})
		if err != nil {
			return fmt.Errorf("generate change %d of %s: %w", seq, d.Key, err)
		}
	}
	return s.add(ctx, "changes", row)
}

func changeRow(d *Doc, seq int64, ops []*api.Operation) (bson.D, error) {
	bins := make(bson.A, len(ops))
	for i, op := range ops {
		b, err := proto.Marshal(op)
		if err != nil {
			return nil, err
		}
		bins[i] = primitive.Binary{Data: b}
	}
	return bson.D{
		{Key: "_id", Value: primitive.NewObjectID()},
		{Key: "project_id", Value: primitive.NilObjectID},
		{Key: "doc_id", Value: d.ID},
		{Key: "server_seq", Value: seq},
		{Key: "actor_id", Value: d.Actor},
		{Key: "client_seq", Value: seq},
		{Key: "lamport", Value: seq},
		{Key: "message", Value: ""},
		{Key: "operations", Value: bins},
		{Key: "presence_change", Value: nil},
		{Key: "version_vector", Value: vector(d.Actor, seq)},
	}, nil
}

// maybeSnapshot writes a snapshot of d at its head as upstream does once
// the head is SnapshotInterval past the last one: 0x01 and a zstd frame of
// the protobuf snapshot.
func (s *Source) maybeSnapshot(ctx context.Context, d *Doc) error {
	if d.doc == nil || s.cfg.SnapshotInterval <= 0 || d.Head < d.lastSnap+s.cfg.SnapshotInterval {
		return nil
	}
	body, err := d.doc.Snapshot()
	if err != nil {
		return err
	}
	d.lastSnap = d.Head
	return s.add(ctx, "snapshots", bson.D{
		{Key: "_id", Value: primitive.NewObjectID()},
		{Key: "project_id", Value: primitive.NilObjectID},
		{Key: "doc_id", Value: d.ID},
		{Key: "server_seq", Value: d.Head},
		{Key: "lamport", Value: d.Head},
		{Key: "version_vector", Value: vector(d.Actor, d.Head)},
		{Key: "snapshot", Value: primitive.Binary{Data: s.enc.EncodeAll(body, []byte{0x01})}},
		{Key: "has_external_body", Value: false},
		{Key: "created_at", Value: time.Now().UTC().Truncate(time.Millisecond)},
	})
}

// vectorKey is an actor as the wire's version vectors name it.
func vectorKey(actor primitive.ObjectID) string {
	return base64.StdEncoding.EncodeToString(actor[:])
}

// vector packs a one-actor version vector as upstream stores it: an Int64
// big-endian entry count, then per entry the actor and an Int64 lamport.
func vector(actor primitive.ObjectID, lamport int64) primitive.Binary {
	b := binary.BigEndian.AppendUint64(nil, 1)
	b = append(b, actor[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(lamport))
	return primitive.Binary{Data: b}
}

// Load reads a database Generate wrote, so that changes can be appended to
// it by another process.
func Load(ctx context.Context, db *mongo.Database) (*Source, error) {
	s := &Source{DB: db, cfg: Config{Batch: 1000}, rows: map[string][]any{}}
	cur, err := db.Collection("documents").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID        primitive.ObjectID `bson:"_id"`
		Key       string             `bson:"key"`
		ServerSeq int64              `bson:"server_seq"`
		Owner     primitive.ObjectID `bson:"owner"`
	}
	if err := cur.All(ctx, &rows); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no documents")
	}
	for _, r := range rows {
		s.Docs = append(s.Docs, &Doc{ID: r.ID, Actor: r.Owner, Key: r.Key, Head: r.ServerSeq})
	}
	return s, nil
}

// Append gives document i n more changes as upstream records a push: the
// rows, then the document's server_seq, then its client's checkpoint and
// version vector.
func (s *Source) Append(ctx context.Context, i, n int) error {
	d := s.Docs[i]
	for range n {
		if err := s.change(ctx, d); err != nil {
			return err
		}
	}
	if err := s.insert(ctx, "changes"); err != nil {
		return err
	}
	if err := s.maybeSnapshot(ctx, d); err != nil {
		return err
	}
	if err := s.insert(ctx, "snapshots"); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, u := range []struct {
		col    string
		filter bson.D
		set    bson.D
	}{
		{"documents", bson.D{{Key: "_id", Value: d.ID}}, bson.D{{Key: "server_seq", Value: d.Head}, {Key: "updated_at", Value: now}}},
		{"clients", bson.D{{Key: "_id", Value: d.Actor}}, bson.D{{Key: "documents." + d.ID.Hex(), Value: clientDocInfo(d.Head)}, {Key: "updated_at", Value: now}}},
		{"versionvectors", bson.D{{Key: "doc_id", Value: d.ID}, {Key: "client_id", Value: d.Actor}}, bson.D{{Key: "version_vector", Value: vector(d.Actor, d.Head)}}},
	} {
		if _, err := s.DB.Collection(u.col).UpdateOne(ctx, u.filter, bson.D{{Key: "$set", Value: u.set}}); err != nil {
			return fmt.Errorf("update %s of %s: %w", u.col, d.Key, err)
		}
	}
	return nil
}
