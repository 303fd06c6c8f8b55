// Package migrate imports an upstream Yorkie 0.7.17 MongoDB database into
// this server's MongoDB database, keeping the IDs upstream gave every
// project, user, client and document, and every document's whole history.
//
// The source is only read. The import is idempotent and resumable: every
// record is written with its upstream ID by an upsert that leaves an equal
// record alone, a document's change log is extended from wherever it ends,
// and a document becomes visible (its key record) only once its log,
// snapshots and record are written; it then records which state of the
// source it copied, so that a later run skips documents that did not
// change and copies only the new changes of the others (catch-up).
package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"
	"google.golang.org/protobuf/proto"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	ymongo "github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
)

// DefaultSourceDatabase is upstream's default database name.
const DefaultSourceDatabase = "yorkie-meta"

// ErrFailed: some records could not be imported; the error lists them and
// the rest was imported.
var ErrFailed = errors.New("import incomplete")

// Config says what to import where.
type Config struct {
	// SourceURI and SourceDatabase name upstream's MongoDB database.
	SourceURI      string
	SourceDatabase string
	// Target is this server's database.
	Target *ymongo.DB
	// Progress receives a progress line every ProgressEvery (nil: none).
	Progress      io.Writer
	ProgressEvery time.Duration
	// Logger receives one line per record that failed; slog.Default if nil.
	Logger *slog.Logger
}

// Report counts what a run saw and wrote.
type Report struct {
	Projects, Users, Members, Invites, Schemas, Documents, Revisions, Clients int
	// Written counts the records a run created or changed, by kind; a run
	// over an unchanged source writes nothing.
	Written map[string]int
	// ChangesCopied counts stored changes copied, Placeholders the server_seq
	// values upstream did not store (presence-only changes).
	ChangesCopied, Placeholders int64
	// DocumentsUnchanged counts documents the target had in the source's state.
	DocumentsUnchanged int
	// ClientsDeferred counts clients left for a later run: one of their
	// documents failed.
	ClientsDeferred int
	// Failures lists the records that could not be imported.
	Failures []error

	mu sync.Mutex // guards the counts while records are imported at once
}

// errDeferred: the client waits for a document that failed.
var errDeferred = errors.New("deferred")

// Importer copies one upstream database into the target.
type Importer struct {
	cfg    Config
	client *mongo.Client
	src    *mongo.Database
	log    *slog.Logger
}

// Open connects to the source and checks that it is a Yorkie database of
// the layout this package reads.
func Open(ctx context.Context, cfg Config) (*Importer, error) {
	if cfg.SourceURI == "" {
		return nil, errors.New("migrate: no source connection URI")
	}
	if cfg.Target == nil {
		return nil, errors.New("migrate: no target database")
	}
	if cfg.SourceDatabase == "" {
		cfg.SourceDatabase = DefaultSourceDatabase
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(cfg.SourceURI).
		SetServerSelectionTimeout(10*time.Second).SetReadPreference(readpref.Primary()))
	if err != nil {
		return nil, fmt.Errorf("migrate: source: %w", err)
	}
	if err := client.Ping(ctx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("migrate: reach source: %w", err)
	}
	src := client.Database(cfg.SourceDatabase)
	if err := checkLayout(ctx, src); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return &Importer{cfg: cfg, client: client, src: src, log: cfg.Logger.With("component", "migrate")}, nil
}

// Close disconnects from the source.
func (im *Importer) Close(ctx context.Context) error {
	return im.client.Disconnect(ctx)
}

// Run imports everything: projects and users first (a conflict there stops
// the run, since the documents would land in the wrong hands), then the
// documents, then the clients with their attachments. A document or
// client that fails is reported and left out; the others are imported.
func (im *Importer) Run(ctx context.Context) (*Report, error) {
	r := &Report{Written: map[string]int{}}
	if err := im.importUsers(ctx, r); err != nil {
		return r, err
	}
	if err := im.importProjects(ctx, r); err != nil {
		return r, err
	}
	if err := im.importMembers(ctx, r); err != nil {
		return r, err
	}
	if err := im.importInvites(ctx, r); err != nil {
		return r, err
	}
	if err := im.importSchemas(ctx, r); err != nil {
		return r, err
	}
	imported, err := im.importDocuments(ctx, r)
	if err != nil {
		return r, err
	}
	if err := im.importRevisions(ctx, r, imported); err != nil {
		return r, err
	}
	if err := im.importClients(ctx, r, imported); err != nil {
		return r, err
	}
	if len(r.Failures) > 0 {
		return r, fmt.Errorf("%w: %w", ErrFailed, errors.Join(r.Failures...))
	}
	return r, nil
}

// each decodes every row of a collection matching filter, in _id order.
func each[T any](ctx context.Context, col *mongo.Collection, filter bson.D, sortBy bson.D, fn func(*T, bson.Raw) error) error {
	opts := options.Find()
	if len(sortBy) > 0 {
		opts.SetSort(sortBy)
	}
	cur, err := col.Find(ctx, filter, opts)
	if err != nil {
		return fmt.Errorf("read %s: %w", col.Name(), err)
	}
	defer func() { _ = cur.Close(context.WithoutCancel(ctx)) }()
	for cur.Next(ctx) {
		var v T
		if err := cur.Decode(&v); err != nil {
			id := cur.Current.Lookup("_id")
			return fmt.Errorf("%s row %v: %w: %w", col.Name(), id, ErrAnotherLayout, err)
		}
		if err := fn(&v, cur.Current); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("read %s: %w", col.Name(), err)
	}
	return nil
}

var byID = bson.D{{Key: "_id", Value: 1}}

func (im *Importer) importUsers(ctx context.Context, r *Report) error {
	return each(ctx, im.src.Collection("users"), bson.D{}, byID, func(u *upUser, raw bson.Raw) error {
		r.Users++
		w, err := im.cfg.Target.ImportUser(ctx, &database.UserInfo{
			ID: u.ID.Hex(), Username: u.Username, HashedPassword: u.HashedPassword, CreatedAt: u.CreatedAt,
		}, sourceMark(raw))
		if err != nil {
			return fmt.Errorf("user %s (%s): %w", u.ID.Hex(), u.Username, err)
		}
		r.count("users", w)
		return nil
	})
}

func (im *Importer) importProjects(ctx context.Context, r *Report) error {
	return each(ctx, im.src.Collection("projects"), bson.D{}, byID, func(p *upProject, raw bson.Raw) error {
		r.Projects++
		info := p.info()
		w, err := im.cfg.Target.ImportProject(ctx, info, sourceMark(raw))
		if err != nil {
			return fmt.Errorf("project %s (%s): %w", p.ID.Hex(), p.Name, err)
		}
		r.count("projects", w)
		return nil
	})
}

// importMembers adds the members upstream's projects invited. An owner
// needs no member record here: the project's owner holds that role.
func (im *Importer) importMembers(ctx context.Context, r *Report) error {
	return each(ctx, im.src.Collection("members"), bson.D{}, byID, func(m *upMember, _ bson.Raw) error {
		r.Members++
		role, err := database.ParseMemberRole(m.Role)
		if err != nil {
			return fmt.Errorf("member %s of project %s: %w: %w", m.UserID.Hex(), m.ProjectID.Hex(), ErrAnotherLayout, err)
		}
		if role == database.RoleOwner {
			return nil
		}
		err = im.cfg.Target.AddMember(ctx, &database.MemberInfo{
			ProjectID: m.ProjectID.Hex(), UserID: m.UserID.Hex(), Role: role,
			InvitedBy: m.InvitedBy.Hex(), InvitedAt: m.InvitedAt.UTC().Truncate(time.Millisecond),
		})
		if errors.Is(err, database.ErrMemberAlreadyExists) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("member %s of project %s: %w", m.UserID.Hex(), m.ProjectID.Hex(), err)
		}
		r.count("members", true)
		return nil
	})
}

// importInvites imports the projects' pending invites, so that a token
// handed out upstream is accepted here. Upstream keeps the token, this
// server its digest; an expired invite is copied too (it is refused as
// upstream refuses it, until upstream's cleanup would have removed it).
func (im *Importer) importInvites(ctx context.Context, r *Report) error {
	return each(ctx, im.src.Collection("invites"), bson.D{}, byID, func(v *upInvite, raw bson.Raw) error {
		r.Invites++
		role, err := database.ParseMemberRole(v.Role)
		if err == nil && role == database.RoleOwner {
			err = errors.New("an invite cannot grant the owner role")
		}
		if err == nil && v.Token == "" {
			err = errors.New("no token")
		}
		if err != nil {
			return fmt.Errorf("invite %s to project %s: %w: %w", v.ID.Hex(), v.ProjectID.Hex(), ErrAnotherLayout, err)
		}
		inv := &database.InviteInfo{
			TokenHash: database.InviteTokenHash(v.Token), ProjectID: v.ProjectID.Hex(), Role: role,
			CreatedBy: v.CreatedBy.Hex(), CreatedAt: v.CreatedAt,
		}
		if v.ExpiresAt != nil {
			inv.ExpiresAt = *v.ExpiresAt
		}
		w, err := im.cfg.Target.ImportInvite(ctx, inv, sourceMark(raw))
		if err != nil {
			return fmt.Errorf("invite %s to project %s: %w", v.ID.Hex(), v.ProjectID.Hex(), err)
		}
		r.count("invites", w)
		return nil
	})
}

// importSchemas imports the projects' schemas with their IDs.
func (im *Importer) importSchemas(ctx context.Context, r *Report) error {
	return each(ctx, im.src.Collection("schemas"), bson.D{}, byID, func(s *upSchema, raw bson.Raw) error {
		r.Schemas++
		w, err := im.cfg.Target.ImportSchema(ctx, s.info(), sourceMark(raw))
		if err != nil {
			return fmt.Errorf("schema %s (%s@%d of project %s): %w", s.ID.Hex(), s.Name, s.Version, s.ProjectID.Hex(), err)
		}
		r.count("schemas", w)
		return nil
	})
}

// sourceMark names the state of a source record: the hash of its bytes.
func sourceMark(raw bson.Raw) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

func (r *Report) count(kind string, written bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if written {
		r.Written[kind]++
	}
}

// importDocuments imports every document and returns whether each is
// complete in the target, by ID. The documents that changed since the last
// run get their new changes from one pass over the source's changes, and
// their snapshots from one pass over its snapshots; then each is completed
// and published in turn.
func (im *Importer) importDocuments(ctx context.Context, r *Report) (map[primitive.ObjectID]bool, error) {
	var docs []*upDocument
	err := each(ctx, im.src.Collection("documents"), bson.D{}, byID, func(d *upDocument, _ bson.Raw) error {
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	marks, err := im.cfg.Target.ImportMarks(ctx)
	if err != nil {
		return nil, err
	}
	recorded, heads, err := im.cfg.Target.ImportStarts(ctx)
	if err != nil {
		return nil, err
	}
	prog := newProgress(im.cfg.Progress, im.cfg.ProgressEvery, docs)
	defer prog.finish()
	done := make(map[primitive.ObjectID]bool, len(docs))
	mu := &r.mu // guards done too
	fail := func(d *upDocument, err error) {
		im.log.Error("document not imported", "document", d.Key, "id", d.ID.Hex(), "error", err)
		mu.Lock()
		defer mu.Unlock()
		r.Failures = append(r.Failures, fmt.Errorf("%s: %w", d.name(), err))
		done[d.ID] = false
	}
	r.Documents += len(docs)

	// Which documents have work, and from where. Each document costs a
	// few round trips, so several are looked at at once.
	works := make([]*docWork, len(docs))
	err = parallel(ctx, docs, func(i int, d *upDocument) {
		w, err := im.startDocument(ctx, d, marks, recorded, heads, prog)
		switch {
		case err != nil:
			prog.docDone(d.ServerSeq)
			fail(d, err)
		case w == nil:
			prog.docDone(d.ServerSeq)
			mu.Lock()
			r.DocumentsUnchanged++
			done[d.ID] = true
			mu.Unlock()
		default:
			works[i] = w
		}
	})
	if err != nil {
		return done, err
	}
	var work, withChanges []*docWork
	for _, w := range works {
		if w == nil {
			continue
		}
		work = append(work, w)
		if w.head < w.d.ServerSeq {
			withChanges = append(withChanges, w)
		}
	}
	if len(withChanges) > 0 {
		if err := im.copyChanges(ctx, withChanges, prog); err != nil {
			return done, err
		}
	}
	if len(work) > 0 {
		if err := im.readSnapshotHeads(ctx, work); err != nil {
			return done, err
		}
	}
	err = parallel(ctx, work, func(_ int, w *docWork) {
		err := w.err
		var st finished
		if err == nil {
			st, err = im.finishDocument(ctx, w)
		}
		prog.docDone(w.head)
		if err != nil {
			fail(w.d, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		r.ChangesCopied += st.copied
		r.Placeholders += st.placeholders
		if n := st.copied + st.placeholders; n > 0 {
			r.Written["changes"] += int(n)
		}
		if st.snapshots > 0 {
			r.Written["snapshots"] += st.snapshots
		}
		r.Written["documents"]++
		done[w.d.ID] = true
	})
	return done, err
}

// concurrency is how many documents are worked on at once: each costs
// round trips to both databases, which overlap.
const concurrency = 8

// parallel calls fn for every item, concurrency at a time, and returns the
// context's error if it ended.
func parallel[T any](ctx context.Context, items []T, fn func(int, T)) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for i, it := range items {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i, it)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// finished counts what finishDocument wrote.
type finished struct {
	copied, placeholders int64
	snapshots            int
}

// startDocument returns the work of bringing the document up to the
// source's state, or nil if the target has it in that state already.
func (im *Importer) startDocument(ctx context.Context, d *upDocument, marks map[string]ymongo.ImportMark,
	recorded map[string]bool, heads map[string]int64, prog *progress,
) (*docWork, error) {
	docID := d.ID.Hex()
	want := ymongo.ImportMark{SourceServerSeq: d.ServerSeq, SourceUpdatedAt: d.UpdatedAt.UTC().Truncate(time.Millisecond), SourceRemoved: !d.RemovedAt.IsZero()}
	mark, marked := marks[docID]
	if marked && mark == want {
		return nil, nil
	}
	// A document without a record here was never completed: its log is
	// an import's alone, and ImportStarts read where it ends. For one
	// completed before, the batches' bounds are trusted when they end
	// where that import did; otherwise (this server wrote to it, or
	// compacted it) the head is looked up.
	head, known := heads[docID]
	if recorded[docID] && !(known && marked && head == mark.SourceServerSeq) {
		var err error
		if head, err = im.cfg.Target.ImportedDocument(ctx, docID); err != nil {
			return nil, err
		}
	}
	if marked && head != mark.SourceServerSeq {
		// A server numbered changes of its own after the last import.
		return nil, fmt.Errorf("this server wrote its changes up to server_seq %d after the import of %d: %w", head, mark.SourceServerSeq, ymongo.ErrImportDiverged)
	}
	if head > d.ServerSeq {
		return nil, fmt.Errorf("the log here ends at server_seq %d, past the source's %d: %w", head, d.ServerSeq, ymongo.ErrImportDiverged)
	}
	return &docWork{d: d, head: head, w: &logWriter{t: im.cfg.Target, docID: docID, next: head + 1, prog: prog}}, nil
}

// finishDocument completes a document whose new changes were copied:
// the rest of its log, its snapshots, its record, then its key record.
func (im *Importer) finishDocument(ctx context.Context, w *docWork) (finished, error) {
	t, d := im.cfg.Target, w.d
	var st finished
	if w.unordered {
		if err := im.copyChangesInOrder(ctx, w); err != nil {
			return st, err
		}
	}
	if err := w.w.fillTo(ctx, d.ServerSeq); err != nil {
		return st, err
	}
	st.copied, st.placeholders = w.w.copied, w.w.placeholders

	// Snapshots are read whole before the document record is written: one
	// that does not decode leaves no record of the document behind.
	snaps, err := im.loadSnapshots(ctx, w)
	if err != nil {
		return st, err
	}
	info := d.info()
	if err := t.PrepareImportedDocument(ctx, info, d.ServerSeq); err != nil {
		return st, err
	}
	for _, s := range snaps {
		wrote, err := t.ImportSnapshot(ctx, d.ID.Hex(), s)
		if err != nil {
			return st, fmt.Errorf("snapshot at server_seq %d: %w", s.ServerSeq, err)
		}
		if wrote {
			st.snapshots++
		}
	}
	want := ymongo.ImportMark{SourceServerSeq: d.ServerSeq, SourceUpdatedAt: d.UpdatedAt.UTC().Truncate(time.Millisecond), SourceRemoved: !d.RemovedAt.IsZero()}
	if err := t.PublishImportedDocument(ctx, info, &want); err != nil {
		return st, err
	}
	return st, nil
}

// copyChangesInOrder copies the changes of a document the source returned
// out of order: what the pass wrote of it goes, and its changes are read
// again by themselves, sorted by server_seq.
func (im *Importer) copyChangesInOrder(ctx context.Context, w *docWork) error {
	d := w.d
	if err := im.cfg.Target.DiscardImportedChanges(ctx, d.ID.Hex(), w.head); err != nil {
		return err
	}
	w.w = &logWriter{t: im.cfg.Target, docID: d.ID.Hex(), next: w.head + 1, prog: w.w.prog}
	// Upstream's index of changes is (doc_id, project_id, server_seq).
	filter := bson.D{
		{Key: "doc_id", Value: d.ID},
		{Key: "project_id", Value: d.ProjectID},
		{Key: "server_seq", Value: bson.D{{Key: "$gt", Value: w.head}, {Key: "$lte", Value: d.ServerSeq}}},
	}
	return each(ctx, im.src.Collection("changes"), filter, bson.D{{Key: "server_seq", Value: 1}}, func(c *upChange, _ bson.Raw) error {
		ch, err := c.change()
		if err != nil {
			return fmt.Errorf("change %s (server_seq %d): %w", c.ID.Hex(), c.ServerSeq, err)
		}
		return w.w.add(ctx, ch)
	})
}

// logWriter appends a document's changes to the target in chunks, filling
// the server_seq values upstream did not store with placeholders.
type logWriter struct {
	t            *ymongo.DB
	docID        string
	next         int64
	pending      []*ymongo.ImportedChange
	copied       int64
	placeholders int64
	prog         *progress
}

// writeChunk is how many changes one write carries.
const writeChunk = 1000

func (w *logWriter) add(ctx context.Context, c *database.Change) error {
	if c.ServerSeq < w.next {
		return fmt.Errorf("change at server_seq %d stored twice upstream", c.ServerSeq)
	}
	if err := w.fill(ctx, c.ServerSeq-1); err != nil {
		return err
	}
	ic, err := encodeChange(c)
	if err != nil {
		return err
	}
	w.pending = append(w.pending, ic)
	w.next = c.ServerSeq + 1
	w.copied++
	return w.flushIfFull(ctx)
}

func (w *logWriter) fill(ctx context.Context, to int64) error {
	for ; w.next <= to; w.next++ {
		ic, err := encodeChange(placeholder(w.next))
		if err != nil {
			return err
		}
		w.pending = append(w.pending, ic)
		w.placeholders++
		if err := w.flushIfFull(ctx); err != nil {
			return err
		}
	}
	return nil
}

// encodeChange is c as the writer holds it until it is written.
func encodeChange(c *database.Change) (*ymongo.ImportedChange, error) {
	body, err := proto.Marshal(c.Body)
	if err != nil {
		return nil, fmt.Errorf("encode change %d: %w", c.ServerSeq, err)
	}
	return &ymongo.ImportedChange{ServerSeq: c.ServerSeq, ActorID: c.ActorID, ClientSeq: c.ClientSeq, Body: body}, nil
}

// fillTo fills the log up to the source's head and writes what is pending.
func (w *logWriter) fillTo(ctx context.Context, head int64) error {
	if err := w.fill(ctx, head); err != nil {
		return err
	}
	return w.flush(ctx)
}

func (w *logWriter) flushIfFull(ctx context.Context) error {
	if len(w.pending) < writeChunk {
		return nil
	}
	return w.flush(ctx)
}

func (w *logWriter) flush(ctx context.Context) error {
	if len(w.pending) == 0 {
		return nil
	}
	if err := w.t.ImportChanges(ctx, w.docID, w.pending); err != nil {
		return err
	}
	w.prog.changes(int64(len(w.pending)))
	w.pending = w.pending[:0]
	return nil
}

// importClients imports every client and its attachments to the
// documents that were imported.
func (im *Importer) importClients(ctx context.Context, r *Report, docs map[primitive.ObjectID]bool) error {
	vectors := map[[2]primitive.ObjectID]map[string]int64{}
	err := each(ctx, im.src.Collection("versionvectors"), bson.D{}, byID, func(v *upVersionVector, _ bson.Raw) error {
		b, err := binaryOf(v.VersionVector, "version_vector")
		if err != nil {
			return fmt.Errorf("versionvectors row of client %s, document %s: %w", v.ClientID.Hex(), v.DocID.Hex(), err)
		}
		vv, err := decodeVersionVector(b)
		if err != nil {
			return fmt.Errorf("versionvectors row of client %s, document %s: %w", v.ClientID.Hex(), v.DocID.Hex(), err)
		}
		vectors[[2]primitive.ObjectID{v.ClientID, v.DocID}] = vv
		return nil
	})
	if err != nil {
		return err
	}
	imported, err := im.cfg.Target.ImportedClients(ctx)
	if err != nil {
		return err
	}
	// Clients are imported a chunk at a time, several at once: each costs
	// round trips.
	var chunk []*upClient
	importChunk := func() error {
		err := parallel(ctx, chunk, func(_ int, c *upClient) {
			err := im.importClient(ctx, c, r, docs, vectors)
			r.mu.Lock()
			defer r.mu.Unlock()
			switch {
			case errors.Is(err, errDeferred):
				r.ClientsDeferred++
			case err != nil && ctx.Err() == nil:
				im.log.Error("client not imported", "client", c.Key, "id", c.ID.Hex(), "error", err)
				r.Failures = append(r.Failures, fmt.Errorf("client %q (%s): %w", c.Key, c.ID.Hex(), err))
			}
		})
		chunk = chunk[:0]
		return err
	}
	err = each(ctx, im.src.Collection("clients"), bson.D{}, byID, func(c *upClient, _ bson.Raw) error {
		r.Clients++
		if at, ok := imported[c.ID.Hex()]; ok && at.Equal(c.UpdatedAt.UTC().Truncate(time.Millisecond)) {
			return nil
		}
		if chunk = append(chunk, c); len(chunk) < clientChunk {
			return nil
		}
		return importChunk()
	})
	if err != nil {
		return err
	}
	return importChunk()
}

// clientChunk is how many clients are read before they are imported.
const clientChunk = 256

func (im *Importer) importClient(ctx context.Context, c *upClient, r *Report, docs map[primitive.ObjectID]bool, vectors map[[2]primitive.ObjectID]map[string]int64) error {
	status := database.ClientDeactivated
	if c.Status == string(database.ClientActivated) {
		status = database.ClientActivated
	}
	ids := make([]string, 0, len(c.Documents))
	for id := range c.Documents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		info := c.Documents[id]
		docID, err := primitive.ObjectIDFromHex(id)
		if err != nil {
			return fmt.Errorf("document %q of its documents: %w", id, ErrAnotherLayout)
		}
		imported, known := docs[docID]
		if !known {
			continue // a document the source no longer has
		}
		if !imported {
			// Left unmarked, the client is imported with the document.
			return errDeferred
		}
		a := &database.Attachment{
			ClientID: c.ID.Hex(), DocID: id, Status: attachmentStatus(info.Status, status),
			ServerSeq: info.ServerSeq, ClientSeq: uint32(info.ClientSeq),
			UpdatedAt: c.UpdatedAt,
		}
		if a.Status == database.Attached {
			a.VersionVector = vectors[[2]primitive.ObjectID{c.ID, docID}]
		}
		w, err := im.cfg.Target.ImportAttachment(ctx, a)
		if err != nil {
			return fmt.Errorf("attachment to document %s: %w", id, err)
		}
		r.count("attachments", w)
	}
	// The client record goes last: it marks the client imported.
	w, err := im.cfg.Target.ImportClient(ctx, &database.ClientInfo{
		ID: c.ID.Hex(), ProjectID: c.ProjectID.Hex(), Key: c.Key, Metadata: c.Metadata,
		Status: status, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}, c.UpdatedAt)
	if err != nil {
		return err
	}
	r.count("clients", w)
	return nil
}

// attachmentStatus maps upstream's state of a client's document: an
// attach that never completed ("attaching") left the client detached, and
// a deactivated client is attached to nothing.
func attachmentStatus(s string, client database.ClientStatus) database.AttachmentStatus {
	switch {
	case s == string(database.Removed):
		return database.Removed
	case s == string(database.Attached) && client == database.ClientActivated:
		return database.Attached
	}
	return database.Detached
}
