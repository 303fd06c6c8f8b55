// Package memory is an in-process database.Database. It is the embedded
// default of a single node and the store the backend's tests run on. What it
// keeps for every document it ever held is kept compact and free of pointers
// where it can be (the change log encoded, see changelog.go; attachments,
// see attachments.go), so that the garbage collector's work does not grow
// with the database. The newest changes are also kept as they were stored,
// within a fixed bound, and shared with readers (see recent.go); every other
// read returns memory of the caller's own, so no caller can corrupt what is
// stored.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/smallmap"
)

// errClosed is reported by every call after Close; it wraps ErrUnavailable so
// callers treat it like an unreachable database.
var errClosed = fmt.Errorf("memory database closed: %w", database.ErrUnavailable)

// DB is an in-memory database.Database, safe for concurrent use.
//
// Lock order: DB.mu before doc.mu, never the reverse.
type DB struct {
	closed atomic.Bool

	clientIDs *database.ClientIDs

	mu        sync.RWMutex
	clients   map[string]*database.ClientInfo // by client ID
	docs      map[string]*doc                 // by document ID
	liveByKey map[docName]string              // project and key -> ID of the live document

	// attached indexes the documents each client has attached now, so the
	// per-client limit and deactivation cost what the client holds, not
	// everything it ever attached. Lock order: doc.mu before attachedMu.
	attachedMu sync.Mutex
	attached   map[string]*smallmap.Set // client ID -> IDs of documents attached

	snaps    snapshotStore // see snapshots.go; its zero value is ready
	accounts accountStore  // see projects.go; its zero value is ready
	revs     revisionStore // see revisions.go; its zero value is ready
	schemas  schemaStore   // see schemas.go; its zero value is ready
	members  memberStore   // see members.go; its zero value is ready
	strikes  strikeStore   // see strikes.go; its zero value is ready
	recent   recentChanges // see recent.go; its zero value is ready
}

// doc is one document: metadata, change log and attachments, under its own
// lock so documents do not contend with each other.
type doc struct {
	mu   sync.RWMutex
	info database.DocInfo
	// log is gapless from log.base+1 by construction.
	log         changeLog
	attachments attachmentSet
	// recent holds the newest changes of the log as they were stored, while
	// held (see recentChanges).
	recent []*database.Change
	held   bool
}

// New returns an empty in-memory database.
func New() *DB {
	return &DB{
		clientIDs: database.NewClientIDs(nil),
		clients:   make(map[string]*database.ClientInfo),
		docs:      make(map[string]*doc),
		liveByKey: make(map[docName]string),
		attached:  make(map[string]*smallmap.Set),
	}
}

var _ database.Database = (*DB)(nil)

// check fails when the database is closed or the caller's context is done.
func (db *DB) check(ctx context.Context, op string) error {
	if db.closed.Load() {
		return fmt.Errorf("%s: %w", op, errClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w: %w", op, database.ErrUnavailable, err)
	}
	return nil
}

// docName is a document's key within its project.
type docName struct{ project, key string }

// newID returns 24 lowercase hex characters from crypto/rand, for documents.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

func cloneClient(c *database.ClientInfo) *database.ClientInfo {
	out := *c
	out.Metadata = maps.Clone(c.Metadata)
	return &out
}

// ActivateClient creates a new activated client with the key.
func (db *DB) ActivateClient(ctx context.Context, projectID, key string, metadata map[string]string) (*database.ClientInfo, error) {
	if err := db.check(ctx, "activate client"); err != nil {
		return nil, err
	}
	now := time.Now()
	db.mu.Lock()
	defer db.mu.Unlock()
	// Taking the ID under the lock keeps the map's order of creation the
	// order of the IDs.
	c := &database.ClientInfo{
		ID:        db.clientIDs.Next(),
		ProjectID: projectID,
		Key:       key,
		Metadata:  maps.Clone(metadata),
		Status:    database.ClientActivated,
		CreatedAt: now,
		UpdatedAt: now,
	}
	db.clients[c.ID] = c
	return cloneClient(c), nil
}

// DeactivateClient marks the client deactivated.
func (db *DB) DeactivateClient(ctx context.Context, projectID, clientID string) (*database.ClientInfo, error) {
	if err := db.check(ctx, "deactivate client"); err != nil {
		return nil, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	c, ok := db.clients[clientID]
	if !ok || c.ProjectID != projectID {
		return nil, fmt.Errorf("deactivate client %q: %w", clientID, database.ErrClientNotFound)
	}
	c.Status = database.ClientDeactivated
	c.UpdatedAt = time.Now()
	return cloneClient(c), nil
}

// FindClient returns the client or ErrClientNotFound.
func (db *DB) FindClient(ctx context.Context, projectID, clientID string) (*database.ClientInfo, error) {
	if err := db.check(ctx, "find client"); err != nil {
		return nil, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	c, ok := db.clients[clientID]
	if !ok || c.ProjectID != projectID {
		return nil, fmt.Errorf("find client %q: %w", clientID, database.ErrClientNotFound)
	}
	return cloneClient(c), nil
}

// FindOrCreateDocument returns the live document with the key, creating it if
// there is none.
func (db *DB) FindOrCreateDocument(ctx context.Context, projectID, key string) (*database.DocInfo, error) {
	if err := db.check(ctx, "find or create document"); err != nil {
		return nil, err
	}
	name := docName{projectID, key}
	db.mu.RLock()
	if id, ok := db.liveByKey[name]; ok {
		d := db.docs[id]
		db.mu.RUnlock()
		return d.snapshot(), nil
	}
	db.mu.RUnlock()

	db.mu.Lock()
	defer db.mu.Unlock()
	if id, ok := db.liveByKey[name]; ok { // created meanwhile
		return db.docs[id].snapshot(), nil
	}
	id := newID()
	for db.docs[id] != nil {
		id = newID()
	}
	d := &doc{
		info: database.DocInfo{ID: id, ProjectID: projectID, Key: key, CreatedAt: time.Now()},
	}
	db.docs[id] = d
	db.liveByKey[name] = id
	return d.snapshot(), nil
}

// snapshot returns a copy of the document's metadata.
func (d *doc) snapshot() *database.DocInfo {
	d.mu.RLock()
	info := d.info
	d.mu.RUnlock()
	return &info
}

// findDoc returns the document or ErrDocumentNotFound.
func (db *DB) findDoc(docID string) (*doc, error) {
	db.mu.RLock()
	d, ok := db.docs[docID]
	db.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("document %q: %w", docID, database.ErrDocumentNotFound)
	}
	return d, nil
}

// fenced reports ErrFenced when a higher epoch than epoch claimed the
// document. The caller holds d.mu.
func (d *doc) fenced(epoch int64) error {
	if epoch < d.info.Epoch {
		return fmt.Errorf("document %q: epoch %d below owner epoch %d: %w",
			d.info.ID, epoch, d.info.Epoch, database.ErrFenced)
	}
	return nil
}

// FindDocument returns the document (live or removed) or ErrDocumentNotFound.
func (db *DB) FindDocument(ctx context.Context, projectID, docID string) (*database.DocInfo, error) {
	if err := db.check(ctx, "find document"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("find document: %w", err)
	}
	if info := d.snapshot(); info.ProjectID == projectID {
		return info, nil
	}
	return nil, fmt.Errorf("find document %q of project %s: %w", docID, projectID, database.ErrDocumentNotFound)
}

// ClaimDocument records epoch as the owner epoch unless a higher one is
// recorded, and returns the document with its head recomputed from the log.
func (db *DB) ClaimDocument(ctx context.Context, docID string, epoch int64) (*database.DocInfo, error) {
	if err := db.check(ctx, "claim document"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fenced(epoch); err != nil {
		return nil, fmt.Errorf("claim document: %w", err)
	}
	if epoch > d.info.Epoch {
		d.info.Epoch = epoch
	}
	d.info.ServerSeq = d.head()
	info := d.info
	return &info, nil
}

// RemoveDocument marks the document removed; its key then starts a new
// document.
func (db *DB) RemoveDocument(ctx context.Context, docID string, epoch int64) error {
	if err := db.check(ctx, "remove document"); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	d, ok := db.docs[docID]
	if !ok {
		return fmt.Errorf("remove document %q: %w", docID, database.ErrDocumentNotFound)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fenced(epoch); err != nil {
		return fmt.Errorf("remove document: %w", err)
	}
	if d.info.RemovedAt.IsZero() {
		d.info.RemovedAt = time.Now()
	}
	if name := (docName{d.info.ProjectID, d.info.Key}); db.liveByKey[name] == docID {
		delete(db.liveByKey, name)
	}
	return nil
}

// FindAttachment returns the client's attachment to the document.
func (db *DB) FindAttachment(ctx context.Context, clientID, docID string) (*database.Attachment, error) {
	if err := db.check(ctx, "find attachment"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("find attachment: %w: %w", database.ErrAttachmentNotFound, err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	a := d.attachments.find(clientID)
	if a == nil {
		return nil, fmt.Errorf("find attachment of client %q to document %q: %w",
			clientID, docID, database.ErrAttachmentNotFound)
	}
	return a.attachment(d.info.ID), nil
}

// ListAttachments returns the document's attachments with status Attached.
func (db *DB) ListAttachments(ctx context.Context, docID string) ([]*database.Attachment, error) {
	if err := db.check(ctx, "list attachments"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("list attachments: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]*database.Attachment, 0, len(d.attachments.list))
	for i := range d.attachments.list {
		if a := &d.attachments.list[i]; a.status == database.Attached {
			out = append(out, a.attachment(d.info.ID))
		}
	}
	return out, nil
}

// ListDocumentClients returns the IDs of every client that ever attached
// the document.
func (db *DB) ListDocumentClients(ctx context.Context, docID string) ([]string, error) {
	if err := db.check(ctx, "list document clients"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("list document clients: %w", err)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]string, 0, len(d.attachments.list))
	for i := range d.attachments.list {
		out = append(out, d.attachments.list[i].clientID)
	}
	return out, nil
}

// ListClientAttachments returns the client's attachments with status Attached.
func (db *DB) ListClientAttachments(ctx context.Context, clientID string) ([]*database.Attachment, error) {
	if err := db.check(ctx, "list client attachments"); err != nil {
		return nil, err
	}
	db.attachedMu.Lock()
	var ids []string
	if set := db.attached[clientID]; set != nil {
		ids = set.AppendTo(make([]string, 0, set.Len()))
	}
	db.attachedMu.Unlock()
	db.mu.RLock()
	docs := make([]*doc, 0, len(ids))
	for _, id := range ids {
		if d, ok := db.docs[id]; ok {
			docs = append(docs, d)
		}
	}
	db.mu.RUnlock()
	var out []*database.Attachment
	for _, d := range docs {
		d.mu.RLock()
		if a := d.attachments.find(clientID); a != nil && a.status == database.Attached {
			out = append(out, a.attachment(d.info.ID))
		}
		d.mu.RUnlock()
	}
	return out, nil
}

// CountClientAttachments returns how many documents the client has attached.
func (db *DB) CountClientAttachments(ctx context.Context, clientID string) (int, error) {
	if err := db.check(ctx, "count client attachments"); err != nil {
		return 0, err
	}
	db.attachedMu.Lock()
	defer db.attachedMu.Unlock()
	if set := db.attached[clientID]; set != nil {
		return set.Len(), nil
	}
	return 0, nil
}

// UpdateAttachment creates or replaces the attachment keyed by (ClientID,
// DocID), storing a copy of a.
func (db *DB) UpdateAttachment(ctx context.Context, a *database.Attachment, epoch int64) error {
	if err := db.check(ctx, "update attachment"); err != nil {
		return err
	}
	if a == nil {
		return errors.New("update attachment: nil attachment")
	}
	d, err := db.findDoc(a.DocID)
	if err != nil {
		return fmt.Errorf("update attachment: %w", err)
	}
	stored := storeAttachment(a)
	if stored.updatedAt.IsZero() {
		stored.updatedAt = time.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fenced(epoch); err != nil {
		return fmt.Errorf("update attachment: %w", err)
	}
	d.attachments.put(stored)
	db.indexAttachment(a.ClientID, a.DocID, a.Status)
	return nil
}

// indexAttachment records whether the client has the document attached. The
// caller holds the document's lock, so updates of one attachment are indexed
// in the order they were stored.
func (db *DB) indexAttachment(clientID, docID string, status database.AttachmentStatus) {
	db.attachedMu.Lock()
	defer db.attachedMu.Unlock()
	set := db.attached[clientID]
	if status != database.Attached {
		if set != nil {
			set.Remove(docID)
			if set.Len() == 0 {
				delete(db.attached, clientID)
			}
		}
		return
	}
	if set == nil {
		set = &smallmap.Set{}
		db.attached[clientID] = set
	}
	set.Add(docID)
}

// AppendChanges stores the batch after the current head, all or nothing.
func (db *DB) AppendChanges(ctx context.Context, docID string, epoch int64, changes []*database.Change) error {
	if err := db.check(ctx, "append changes"); err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil
	}
	for i, c := range changes {
		if c == nil || c.Body == nil {
			return fmt.Errorf("append changes to %q: change %d has no body", docID, i)
		}
		if i > 0 && c.ServerSeq != changes[i-1].ServerSeq+1 {
			return fmt.Errorf("append changes to %q: server_seq %d does not follow %d",
				docID, c.ServerSeq, changes[i-1].ServerSeq)
		}
	}
	// Encoding is the slow part: done before any lock is taken.
	buf, lens, err := encodeChanges(changes)
	if err != nil {
		return fmt.Errorf("append changes to %q: %w", docID, err)
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return fmt.Errorf("append changes: %w", err)
	}
	defer db.recent.trim() // after the document's lock is released
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fenced(epoch); err != nil {
		return fmt.Errorf("append changes: %w", err)
	}
	head := d.head()
	if first := changes[0].ServerSeq; first != head+1 {
		// first <= head: a server_seq is taken. first > head+1: the writer's
		// idea of the head is wrong. Either way it must reload and retry.
		return fmt.Errorf("append changes to %q: batch starts at server_seq %d, head is %d: %w",
			docID, first, head, database.ErrConflict)
	}
	d.log.appendRecords(buf, lens)
	db.recent.add(d, changes)
	d.info.ServerSeq = d.head()
	return nil
}

// FindChanges returns the changes with from <= server_seq <= to, in order:
// the recent ones as they were stored (shared, not to be mutated), the others
// decoded.
func (db *DB) FindChanges(ctx context.Context, docID string, from, to int64) ([]*database.Change, error) {
	if err := db.check(ctx, "find changes"); err != nil {
		return nil, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return nil, fmt.Errorf("find changes: %w", err)
	}
	d.mu.RLock()
	from, to = max(from, d.log.base+1), min(to, d.head())
	recent, recentFirst := d.recentFrom()
	v := d.log.view(from, min(to, recentFirst-1))
	d.mu.RUnlock()
	if from > to {
		return nil, nil
	}
	out, err := v.decode(int(to - from + 1))
	if err != nil {
		return nil, fmt.Errorf("find changes of %q: %w", docID, err)
	}
	for seq := max(from, recentFirst); seq <= to; seq++ {
		out = append(out, recent[seq-recentFirst])
	}
	return out, nil
}

// LastClientSeq returns the highest client_seq the actor stored with
// server_seq > after (0 if none).
func (db *DB) LastClientSeq(ctx context.Context, docID, actorID string, after int64) (uint32, error) {
	if err := db.check(ctx, "last client seq"); err != nil {
		return 0, err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return 0, fmt.Errorf("last client seq: %w", err)
	}
	d.mu.RLock()
	v := d.log.view(after+1, d.head())
	d.mu.RUnlock()
	var last uint32
	for i := range v.ends {
		clientSeq, actor, _, err := header(v.record(i))
		if err != nil {
			return 0, fmt.Errorf("last client seq of %q at %d: %w", docID, v.first+int64(i), err)
		}
		if clientSeq > last && string(actor) == actorID {
			last = clientSeq
		}
	}
	return last, nil
}

// head is the server_seq of the last change of the log. The caller holds
// d.mu.
func (d *doc) head() int64 { return d.log.head() }

// Close makes every later call fail with an error wrapping ErrUnavailable.
func (db *DB) Close(ctx context.Context) error {
	db.closed.Store(true)
	return nil
}
