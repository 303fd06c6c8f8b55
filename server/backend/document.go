package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/smallmap"
)

// docState is what this node keeps about a document it serves. Every field is
// guarded by the lock (a one-slot channel, so waiting honours a context).
type docState struct {
	lock chan struct{}
	id   string

	// released: the node gave the document up; a waiter must look again.
	released bool
	// loaded: the fields below match the database. Cleared whenever a
	// write's outcome is unsure, so the next call reloads.
	loaded  bool
	project string
	key     string
	epoch   int64
	head    int64
	removed bool
	// docEpoch is the document epoch (upstream's, counting compactions;
	// not the owner epoch above) and compactedSeq the server_seq of the
	// last compaction's change (0: none).
	docEpoch     int64
	compactedSeq int64
	// atts holds the attachments with status Attached, by client ID.
	atts map[string]*attState
	// schema is the schema the document is bound to (see schemas.go).
	schema docSchema

	// synced is the minimum synced version vector over atts.
	synced minVector
	// known holds the wire keys of the actors a pushed vector may name:
	// every client that ever attached the document, and the initial actor.
	known smallmap.Set

	// doc is the document built from the log up to docSeq, or nil when it
	// must be rebuilt (never built, evicted, or dropped after a failure).
	doc    *document.Document
	docSeq int64
	// recent holds the newest changes this node appended, for pulls to
	// read instead of the database (see recentchanges.go).
	recent changeWindow
	// heapEst is doc's heap estimate when its size was heapAt; heapOf is
	// the document it was taken of.
	heapOf  *document.Document
	heapAt  float64
	heapEst float64
	// snapSeq is the server_seq of the newest snapshot stored or being
	// stored; the next one is due an interval after it.
	snapSeq int64
	// gcWith is the minimum synced vector garbage was last collected with;
	// collection runs again only when the minimum is a new one.
	gcWith map[string]int64
	// collected counts the collections that purged something, which a
	// kept snapshot answer must not predate.
	collected uint64
	// collections are the last collections that purged something, for
	// snapshot answers rebuilt off the lock to repeat.
	collections []collection
	// snap takes the document's snapshots off the lock; it has a lock of
	// its own.
	snap *docSnapshots
	// json is doc's JSON when it was at jsonSeq (jsonOf is that
	// document), kept for the AdminService while the head does not move.
	json    string
	jsonOf  *document.Document
	jsonSeq int64
	// cached is the document's entry in the backend's document cache,
	// guarded by the cache's mutex.
	cached *cacheEntry
}

// newDocState is the state of a document this node has not served yet; its
// window of recent changes counts against the backend's budget.
func (b *Backend) newDocState(docID string) *docState {
	return &docState{lock: make(chan struct{}, 1), id: docID, snap: newDocSnapshots(), recent: changeWindow{held: &b.windows.held}}
}

// attState is one attached client's attachment as cached here.
type attState struct {
	att database.Attachment
	// verified: att.ClientSeq was reconciled with the log since loading.
	verified bool
	// lamport is the lamport of the client's last stored change in this
	// attachment, or -1 when unknown.
	lamport int64
	// persistedAt is when att was last written to the database; unsaved
	// says att has changed since.
	persistedAt time.Time
	unsaved     bool
}

func (ds *docState) unlock() { <-ds.lock }

// lockState returns the state of document docID, locked, neither loaded nor
// checked: a state released while the caller waited for it is passed over
// for the one that replaced it.
func (b *Backend) lockState(ctx context.Context, docID string) (*docState, error) {
	for {
		b.mu.RLock()
		ds := b.docs[docID]
		b.mu.RUnlock()
		if ds == nil {
			b.mu.Lock()
			if ds = b.docs[docID]; ds == nil {
				ds = b.newDocState(docID)
				b.docs[docID] = ds
			}
			b.mu.Unlock()
		}
		select {
		case ds.lock <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the lock of document %s: %w", docID, ctx.Err())
		}
		if !ds.released {
			return ds, nil
		}
		ds.unlock()
	}
}

// lockDoc returns the state of document docID of project p, locked and
// loaded. The caller unlocks. Another project's document is
// database.ErrDocumentNotFound: a document ID is no way into another
// project.
func (b *Backend) lockDoc(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string) (*docState, error) {
	pid, err := projectID(p)
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", docID, err)
	}
	ds, err := b.lockState(ctx, docID)
	if err != nil {
		return nil, err
	}
	if !ds.loaded {
		// A reload reads the attachments as the writes left after the
		// lock have made them.
		if err := b.attWrites.wait(ctx, docID, ""); err != nil {
			ds.unlock()
			return nil, err
		}
		if err := b.load(ctx, pid, epoch, ds); err != nil {
			ds.unlock()
			return nil, err
		}
	}
	if ds.project != pid {
		ds.unlock()
		return nil, fmt.Errorf("document %s of project %s: %w", docID, pid, database.ErrDocumentNotFound)
	}
	return ds, nil
}

// answer is a call's reply as it stands when the call gives up the
// document's lock, with what it leaves for after the lock so that other
// calls on the document do not wait for it: the attachment write it queued
// (see attwrites.go) and the snapshot to encode into the pack.
type answer struct {
	pack  *api.ChangePack
	write *attWrite
	job   *snapshotJob
}

// settle runs locked with the document's lock, which lockDoc took, then
// releases it and completes the answer: the queued attachment write (the
// call fails if it does), then the snapshot encoding.
func (b *Backend) settle(ctx context.Context, ds *docState, locked func() (answer, error)) (*api.ChangePack, error) {
	a, err := func() (answer, error) {
		defer ds.unlock()
		return locked()
	}()
	if a.write != nil {
		if err == nil {
			err = b.writeQueued(ctx, ds, a.write)
		} else {
			b.attWrites.finish(a.write)
		}
	}
	if err != nil {
		return nil, err
	}
	if a.job != nil {
		data, err := b.encodeAnswer(ctx, ds.snap, *a.job)
		if err != nil {
			return nil, fmt.Errorf("snapshot answer: %w", err)
		}
		a.pack.Snapshot = data
	}
	return a.pack, nil
}

// load reads the document's state from the database, claiming it with the
// owner epoch the call in project pid was routed with. The caller holds the
// lock.
func (b *Backend) load(ctx context.Context, pid string, epoch int64, ds *docState) error {
	info, err := b.db.ClaimDocument(ctx, ds.id, epoch)
	if errors.Is(err, database.ErrDocumentNotFound) {
		return err
	}
	if errors.Is(err, database.ErrFenced) {
		// The routing binding is older than the database's knowledge: the
		// cluster layer releases it, so the call routed again binds afresh.
		name, _ := b.documentName(ctx, pid, ds.id)
		b.fenced(ds.id, name)
		b.forget(ds)
		return fmt.Errorf("%w: %w", ErrStaleRoute, err)
	}
	if err != nil {
		return err
	}
	list, err := b.db.ListAttachments(ctx, ds.id)
	if err != nil {
		return fmt.Errorf("document %s: list attachments: %w", ds.id, err)
	}
	atts := make(map[string]*attState, len(list))
	for _, a := range list {
		atts[a.ClientID] = &attState{att: *a, lamport: -1}
	}
	ever, err := b.db.ListDocumentClients(ctx, ds.id)
	if err != nil {
		return fmt.Errorf("document %s: list clients: %w", ds.id, err)
	}
	var known smallmap.Set
	known.Add(initialActorKey)
	for _, id := range ever {
		if k, err := actorKey(id); err == nil {
			known.Add(k)
		}
	}
	sch, err := b.loadSchema(ctx, info.ProjectID, info.Schema)
	if err != nil {
		return fmt.Errorf("document %s: %w", ds.id, err)
	}
	if ds.doc != nil && ds.docEpoch != info.DocEpoch {
		// Built before a compaction (a copy warmed before the binding
		// moved here): its history is gone.
		b.dropDoc(ds)
	}
	// Another node may have written the log since this one last held it.
	ds.recent.reset()
	ds.project, ds.key, ds.epoch, ds.head = info.ProjectID, info.Key, epoch, info.ServerSeq
	ds.schema = sch
	ds.removed = !info.RemovedAt.IsZero()
	ds.docEpoch, ds.compactedSeq = info.DocEpoch, info.CompactedSeq
	ds.atts = atts
	ds.known = known
	ds.synced.reset(atts)
	ds.loaded = true
	b.rememberName(info)
	return nil
}

// forget drops the document's state; the caller holds its lock. A later call
// starts from a fresh state.
func (b *Backend) forget(ds *docState) {
	ds.released = true
	ds.loaded = false
	b.dropDoc(ds)
	b.mu.Lock()
	if b.docs[ds.id] == ds {
		delete(b.docs, ds.id)
	}
	b.mu.Unlock()
}

// ReleaseDocument tells the backend this node no longer owns the document:
// its cached state is dropped and its subscriptions end with an error
// wrapping cause and ErrDocumentReleased (retryable: clients reconnect to
// the new owner). A call in progress on the
// document finishes first.
func (b *Backend) ReleaseDocument(ctx context.Context, docID string, cause error) error {
	b.mu.RLock()
	ds := b.docs[docID]
	b.mu.RUnlock()
	if ds != nil {
		select {
		case ds.lock <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("release document %s: %w", docID, ctx.Err())
		}
		// The calls that ended under the lock finish their attachment
		// writes before the next owner can claim the document.
		if err := b.attWrites.wait(ctx, docID, ""); err != nil {
			ds.unlock()
			return fmt.Errorf("release document %s: %w", docID, err)
		}
		b.forget(ds)
		ds.unlock()
	}
	err := fmt.Errorf("document %s: %w", docID, ErrDocumentReleased)
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	b.ps.EndDocument(docID, err)
	return nil
}

// ReleaseKey releases, as ReleaseDocument does, every document of the
// project served here under the key (a removed document's key may have
// started a new one). The cluster layer calls it with the keys whose binding
// this node lost.
func (b *Backend) ReleaseKey(ctx context.Context, projectID, key string, cause error) error {
	name := DocName{Project: projectID, Key: key}
	b.mu.RLock()
	ids := b.names.ids(name)
	b.mu.RUnlock()
	var errs []error
	for _, id := range ids {
		if err := b.ReleaseDocument(ctx, id, cause); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DocumentKey returns the key of a document ID of project p; another
// project's document is ErrDocumentNotFound. Names never change, so they
// are cached.
func (b *Backend) DocumentKey(ctx context.Context, p *database.ProjectInfo, docID string) (string, error) {
	pid, err := projectID(p)
	if err != nil {
		return "", fmt.Errorf("document %q: %w", docID, err)
	}
	name, err := b.documentName(ctx, pid, docID)
	if err != nil {
		return "", err
	}
	if name.Project != pid {
		return "", fmt.Errorf("document %q in project %s: %w", docID, pid, database.ErrDocumentNotFound)
	}
	return name.Key, nil
}

// documentName returns the name of a document ID, from the cache or else as
// project pid finds it.
func (b *Backend) documentName(ctx context.Context, pid, docID string) (DocName, error) {
	b.mu.RLock()
	name, ok := b.names.byID[docID]
	b.mu.RUnlock()
	if ok {
		return name, nil
	}
	// The database's error names the document already.
	info, err := b.db.FindDocument(ctx, pid, docID)
	if err != nil {
		return DocName{}, err
	}
	b.rememberName(info)
	return DocName{Project: info.ProjectID, Key: info.Key}, nil
}

func (b *Backend) rememberName(info *database.DocInfo) {
	b.mu.RLock()
	_, ok := b.names.byID[info.ID]
	b.mu.RUnlock()
	if !ok {
		b.mu.Lock()
		b.names.add(info.ID, DocName{Project: info.ProjectID, Key: info.Key})
		b.mu.Unlock()
	}
}

// addAttachment records e, whose vector is still empty, as the client's
// attachment (replacing an earlier one) and counts it in the minimum synced
// vector. The caller holds the lock.
func (ds *docState) addAttachment(clientID string, e *attState) {
	if old := ds.atts[clientID]; old != nil {
		delete(ds.atts, clientID)
		ds.synced.leave(old.att.VersionVector, ds.atts)
	}
	ds.atts[clientID] = e
	ds.synced.join()
}

// dropAttachment removes the client's attachment and its vector from the
// minimum synced vector. The caller holds the lock.
func (ds *docState) dropAttachment(clientID string) {
	if e := ds.atts[clientID]; e != nil {
		delete(ds.atts, clientID)
		ds.synced.leave(e.att.VersionVector, ds.atts)
	}
}

// reportVector records vv as the client's vector and follows it in the
// minimum synced vector, reporting whether it changed. A vector naming an
// actor outside ds.known is refused and leaves everything as it was. The
// caller holds the lock.
func (ds *docState) reportVector(e *attState, vv map[string]int64) (bool, error) {
	if len(vv) > ds.known.Len() {
		return false, fmt.Errorf("%d actors, the document knows %d: %w", len(vv), ds.known.Len(), ErrInvalidVersionVector)
	}
	old := e.att.VersionVector
	e.att.VersionVector = vv
	changed, unknown := ds.synced.update(old, vv, ds.atts, &ds.known)
	if unknown != "" {
		// Only a misbehaving client gets here: start over from the
		// attachments rather than undo the entries already followed.
		e.att.VersionVector = old
		ds.synced.reset(ds.atts)
		return false, fmt.Errorf("actor %q: %w", truncate(unknown), ErrInvalidVersionVector)
	}
	return changed, nil
}
