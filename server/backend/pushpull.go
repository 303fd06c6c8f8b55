package backend

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// maxAppendAttempts bounds the reload-and-retry rounds after ErrConflict.
const maxAppendAttempts = 4

// attachmentFlush is how long an attachment's reported vector and sent
// server_seq may stay newer in memory than in the database. Every watcher
// pulls after every change, so writing them each time would multiply the
// writes by the watchers; a lagging copy is safe, since after a reload it only
// lowers the minimum synced vector (or leaves an actor out of it), which
// delays collecting tombstones. A change not yet written is written by the
// client's first call after the interval; a call that stores changes always
// writes the attachment (its client_seq).
const attachmentFlush = time.Second

// AttachDocument creates the document of project p if needed, attaches the
// client (a fresh attachment: client_seq from 0, starting at the current
// head) and runs the pack like PushPull.
func (b *Backend) AttachDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docKey string, pack *api.ChangePack) (string, *api.ChangePack, error) {
	docID, resp, _, err := b.AttachDocumentWithSchema(ctx, p, epoch, clientID, docKey, "", pack)
	return docID, resp, err
}

// AttachDocumentWithSchema is AttachDocument for a client that names a schema
// key ("" for none): a document with no schema and no other attached client
// is bound to it (database.ErrSchemaNotFound if the project has no such
// schema). It also returns the rules of the document's schema.
func (b *Backend) AttachDocumentWithSchema(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docKey, schemaKey string, pack *api.ChangePack) (string, *api.ChangePack, []database.Rule, error) {
	if err := b.checkOpen(); err != nil {
		return "", nil, nil, err
	}
	if err := b.validatePack(clientID, pack); err != nil {
		return "", nil, nil, fmt.Errorf("attach document %q: %w", docKey, err)
	}
	if err := b.ensureActivated(ctx, p, clientID); err != nil {
		return "", nil, nil, fmt.Errorf("attach document %q: %w", docKey, err)
	}
	// A document removed between finding it and locking it leaves its key
	// to a new document: look again once.
	var (
		info *database.DocInfo
		ds   *docState
		err  error
	)
	pid := p.ID // checked by ensureActivated
	for attempt := 0; ; attempt++ {
		if info, err = b.db.FindOrCreateDocument(ctx, pid, docKey); err != nil {
			return "", nil, nil, fmt.Errorf("attach document %q: %w", docKey, err)
		}
		b.rememberName(info)
		if ds, err = b.lockDoc(ctx, p, epoch, info.ID); err != nil {
			return "", nil, nil, fmt.Errorf("attach document %q: %w", docKey, err)
		}
		if !ds.removed {
			break
		}
		ds.unlock()
		if attempt == 1 {
			return "", nil, nil, fmt.Errorf("attach document %q (%s): %w", docKey, info.ID, ErrDocumentRemoved)
		}
	}
	var rules []database.Rule
	resp, err := b.settle(ctx, ds, func() (answer, error) {
		// Counted under the document's lock at its owner, which serves every
		// attach of it, so racing attaches through any node never pass it.
		if limit := p.MaxAttachmentsPerDocument; limit > 0 {
			n := len(ds.atts)
			if _, again := ds.atts[clientID]; again {
				n--
			}
			if n >= limit {
				return answer{}, fmt.Errorf("attach document %q (%s): %d of %d clients attached: %w",
					docKey, info.ID, n, limit, ErrTooManyAttachments)
			}
		}
		others := len(ds.atts)
		if _, again := ds.atts[clientID]; again {
			others--
		}
		if err := b.bindSchema(ctx, ds, schemaKey, others); err != nil {
			return answer{}, fmt.Errorf("attach document %q with schema %q: %w", docKey, schemaKey, err)
		}
		actor, err := actorKey(clientID)
		if err != nil {
			return answer{}, fmt.Errorf("attach document %q: %w", docKey, err)
		}
		// The client is known from now on, even if the attach fails below;
		// a refused pack must not leave an attachment behind.
		ds.known.Add(actor)
		if err := ds.checkVector(pack.GetVersionVector().GetVector()); err != nil {
			return answer{}, fmt.Errorf("attach document %q by %s: %w", docKey, clientID, err)
		}
		if err := ds.checkChangeVectors(pack); err != nil {
			return answer{}, fmt.Errorf("attach document %q by %s: %w", docKey, clientID, err)
		}
		e := &attState{
			att: database.Attachment{
				ClientID:   clientID,
				DocID:      info.ID,
				Status:     database.Attached,
				AttachedAt: ds.head,
				DocEpoch:   ds.docEpoch,
				UpdatedAt:  time.Now(),
			},
			verified: true,
		}
		if err := b.writeAttachment(ctx, ds, &e.att); err != nil {
			return answer{}, fmt.Errorf("attach document %q: %w", docKey, err)
		}
		ds.addAttachment(clientID, e)
		a, err := b.exchange(ctx, p, ds, clientID, e, pack, false, b.maxPack, false)
		if err != nil {
			return answer{}, fmt.Errorf("attach document %q: %w", docKey, err)
		}
		rules = ds.schema.rules
		return a, nil
	})
	if err != nil {
		return "", nil, nil, err
	}
	return info.ID, resp, rules, nil
}

// DetachDocument stores the pack (normally the client's presence clear),
// then marks the client's attachment detached.
func (b *Backend) DetachDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	return fresh(ctx, b, docID, func() (*api.ChangePack, error) { return b.detachDocument(ctx, p, epoch, clientID, docID, pack) })
}

func (b *Backend) detachDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	ds, e, err := b.begin(ctx, p, epoch, clientID, docID, pack)
	if err != nil {
		return nil, fmt.Errorf("detach document: %w", err)
	}
	return b.settle(ctx, ds, func() (answer, error) {
		// No bound: the attachment ends here, so nothing may be left behind.
		// A client attached before a compaction has nothing to sync: it only
		// leaves.
		a, err := b.exchangeOrLeave(ctx, p, ds, clientID, e, pack)
		if err != nil {
			return answer{}, fmt.Errorf("detach document: %w", err)
		}
		status, err := b.removeIfLast(ctx, ds, clientID, p)
		if err != nil {
			return answer{}, fmt.Errorf("detach document: %w", err)
		}
		if err := b.endAttachment(ctx, ds, clientID, e, status); err != nil {
			return answer{}, fmt.Errorf("detach document: %w", err)
		}
		b.leftDocument(clientID, docID)
		a.pack.IsRemoved = ds.removed
		return a, nil
	})
}

// removeIfLast removes the document when its project removes documents on
// detach and the detaching client is the last one attached, as upstream
// does; it returns the status the client's attachment ends with. The other
// clients' next PushPull learns the removal. The caller holds the lock.
func (b *Backend) removeIfLast(ctx context.Context, ds *docState, clientID string, p *database.ProjectInfo) (database.AttachmentStatus, error) {
	if !p.RemoveOnDetach || ds.removed {
		return database.Detached, nil
	}
	for id := range ds.atts {
		if id != clientID {
			return database.Detached, nil
		}
	}
	if err := b.db.RemoveDocument(ctx, ds.id, ds.epoch); err != nil {
		b.writeFailed(ds, err)
		return "", fmt.Errorf("remove on detach: %w", err)
	}
	ds.removed = true
	b.publishChanged(ds.id, clientID)
	return database.Removed, nil
}

// RemoveDocument stores the pack, marks the document removed and the
// client's attachment removed. The other clients learn it on their next
// PushPull (is_removed, with the changes they had not pulled), which the
// CHANGED event published here prompts.
func (b *Backend) RemoveDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	return fresh(ctx, b, docID, func() (*api.ChangePack, error) { return b.removeDocument(ctx, p, epoch, clientID, docID, pack) })
}

func (b *Backend) removeDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack) (*api.ChangePack, error) {
	ds, e, err := b.begin(ctx, p, epoch, clientID, docID, pack)
	if err != nil {
		return nil, fmt.Errorf("remove document: %w", err)
	}
	return b.settle(ctx, ds, func() (answer, error) {
		a, err := b.exchangeOrLeave(ctx, p, ds, clientID, e, pack)
		if err != nil {
			return answer{}, fmt.Errorf("remove document: %w", err)
		}
		if !ds.removed {
			if err := b.db.RemoveDocument(ctx, docID, ds.epoch); err != nil {
				b.writeFailed(ds, err)
				return answer{}, fmt.Errorf("remove document: %w", err)
			}
			ds.removed = true
			b.publishChanged(docID, clientID)
		}
		if err := b.endAttachment(ctx, ds, clientID, e, database.Removed); err != nil {
			return answer{}, fmt.Errorf("remove document: %w", err)
		}
		b.leftDocument(clientID, docID)
		a.pack.IsRemoved = true
		return a, nil
	})
}

// PushPull stores the new changes of the client of project p and returns
// the changes of others it has not seen (none when pushOnly).
func (b *Backend) PushPull(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack, pushOnly bool) (*api.ChangePack, error) {
	return fresh(ctx, b, docID, func() (*api.ChangePack, error) { return b.pushPull(ctx, p, epoch, clientID, docID, pack, pushOnly) })
}

func (b *Backend) pushPull(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack, pushOnly bool) (*api.ChangePack, error) {
	ds, e, err := b.begin(ctx, p, epoch, clientID, docID, pack)
	if err != nil {
		return nil, fmt.Errorf("push pull: %w", err)
	}
	return b.settle(ctx, ds, func() (answer, error) {
		if err := ds.checkEpoch(e); err != nil {
			return answer{}, fmt.Errorf("push pull: %w", err)
		}
		a, err := b.exchange(ctx, p, ds, clientID, e, pack, pushOnly, b.maxPack, true)
		if err != nil {
			return answer{}, fmt.Errorf("push pull: %w", err)
		}
		return a, nil
	})
}

// fresh runs op, and once more with the document reloaded if op refused the
// call from this node's cached view. Another node may have served the
// document since this one loaded it (ownership moved away and back), so only
// the database may say that a client is not attached or pushed out of order.
func fresh[T any](ctx context.Context, b *Backend, docID string, op func() (T, error)) (T, error) {
	v, err := op()
	if errors.Is(err, ErrInvalidClientSeq) || errors.Is(err, ErrDocumentNotAttached) {
		if b.invalidate(ctx, docID) {
			return op()
		}
	}
	return v, err
}

// invalidate makes the next call on the document reload it; it reports
// whether there was cached state to drop.
func (b *Backend) invalidate(ctx context.Context, docID string) bool {
	b.mu.RLock()
	ds := b.docs[docID]
	b.mu.RUnlock()
	if ds == nil {
		return false
	}
	select {
	case ds.lock <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	ds.loaded = false
	ds.unlock()
	return true
}

// begin validates a call on an attached document of project p and returns
// the document's state, locked, with the client's attachment.
func (b *Backend) begin(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string, pack *api.ChangePack) (*docState, *attState, error) {
	if err := b.checkOpen(); err != nil {
		return nil, nil, err
	}
	if err := b.validatePack(clientID, pack); err != nil {
		return nil, nil, err
	}
	if err := b.ensureActivated(ctx, p, clientID); err != nil {
		return nil, nil, err
	}
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return nil, nil, err
	}
	e := ds.atts[clientID]
	if e == nil {
		ds.unlock()
		return nil, nil, fmt.Errorf("client %s: %w", clientID, ErrDocumentNotAttached)
	}
	return ds, e, nil
}

// validatePack checks what needs no state: a checkpoint and changes of this client with consecutive client_seq values.
func (b *Backend) validatePack(clientID string, pack *api.ChangePack) error {
	if pack == nil || pack.Checkpoint == nil {
		return fmt.Errorf("no checkpoint: %w", ErrInvalidChangePack)
	}
	if pack.Checkpoint.ServerSeq < 0 {
		return fmt.Errorf("negative checkpoint server_seq: %w", ErrInvalidChangePack)
	}
	for i, c := range pack.Changes {
		if c == nil || c.Id == nil {
			return fmt.Errorf("change %d has no id: %w", i, ErrInvalidChangePack)
		}
		if !actorIs(c.Id.ActorId, clientID) {
			return fmt.Errorf("change %d is not by client %s: %w", i, clientID, ErrInvalidChangePack)
		}
		if c.Id.ClientSeq == 0 {
			return fmt.Errorf("change %d has client_seq 0: %w", i, ErrInvalidChangePack)
		}
		if i > 0 && c.Id.ClientSeq != pack.Changes[i-1].Id.ClientSeq+1 {
			return fmt.Errorf("change %d: client_seq %d does not follow %d: %w",
				i, c.Id.ClientSeq, pack.Changes[i-1].Id.ClientSeq, ErrInvalidChangePack)
		}
	}
	return nil
}

// actorIs reports whether actor is the byte form of the lowercase hex ID,
// without allocating.
func actorIs(actor []byte, hexID string) bool {
	const digits = "0123456789abcdef"
	if len(actor)*2 != len(hexID) {
		return false
	}
	for i, c := range actor {
		if hexID[2*i] != digits[c>>4] || hexID[2*i+1] != digits[c&0x0f] {
			return false
		}
	}
	return true
}

// exchange runs one pack for an attached client: store its new changes, pull
// what it has not seen, record its checkpoint and vector. The caller holds
// the document's lock.
//
// limit bounds the changes stored by this call (0: no bound). The SDK cannot
// split its packs and stops syncing for good on a rejected one, so a pack
// beyond the bound is acknowledged in part: the client keeps the rest and
// sends it again on its next PushPull.
//
// writeLater leaves the attachment write for after the lock (the answer's
// write, sent by settle); otherwise it is written here. Queueing it is the
// last step that can fail, so a failed call leaves no queued write.
func (b *Backend) exchange(ctx context.Context, p *database.ProjectInfo, ds *docState, clientID string, e *attState, pack *api.ChangePack, pushOnly bool, limit int, writeLater bool) (answer, error) {
	var a answer
	b.metrics.PushPulls.Add(1)
	if err := ds.checkChangeVectors(pack); err != nil {
		return answer{}, fmt.Errorf("pack of %s: %w", clientID, err)
	}
	// The vector counts at once, so this answer's minimum includes it. It is
	// what the client has seen whatever becomes of its changes, and a failed
	// write below makes the next call reload the state anyway.
	reported := pack.GetVersionVector().GetVector() // not mutated once decoded
	vvChanged, err := ds.reportVector(e, reported)
	if err != nil {
		return answer{}, fmt.Errorf("pack of %s: %w", clientID, err)
	}
	// Nothing more is stored in a removed document, but the client still
	// gets the changes it has not pulled along with the removal, so that its
	// replica ends with the last edits.
	var stored int
	// How far behind the client is counts without its own new changes.
	headBefore := ds.head
	if !ds.removed {
		stored, err = b.push(ctx, p, ds, clientID, e, pack.Changes, limit)
		if stored > 0 {
			b.metrics.ChangesStored.Add(int64(stored))
			b.publishChanged(ds.id, clientID)
			if b.changed != nil && editsRoot(pack.Changes, e.att.ClientSeq, stored) {
				b.changed(ctx, p, ds.key)
			}
		}
		if err != nil {
			return answer{}, err
		}
	}

	minSynced := ds.synced.vector(reported)
	b.collect(ds, minSynced)
	if stored > 0 {
		b.maybeSnapshot(ctx, p, ds, minSynced)
	}

	from := min(pack.Checkpoint.ServerSeq, ds.head)
	respSeq := ds.head
	var (
		changes  []*api.Change
		snapshot []byte
		docVV    *api.VersionVector
	)
	if pushOnly {
		respSeq = from
	} else if threshold := b.snapThresholdFor(p); threshold > 0 && headBefore-from >= threshold {
		// Far behind: the document as it is now costs its size, the
		// changes its history. It holds the requester's pushed changes
		// and presence, as the SDK expects of a snapshot.
		// Encoded after the lock is released, unless already at hand.
		if snapshot, a.job, docVV, err = b.snapshotAnswer(ctx, ds, minSynced); err != nil {
			return answer{}, err
		}
		b.metrics.SnapshotsSent.Add(1)
	} else if from < ds.head {
		if changes, err = b.pull(ctx, ds, clientID, e, from); err != nil {
			return answer{}, err
		}
		b.metrics.ChangesSent.Add(int64(len(changes)))
	}

	next := e.att
	next.ServerSeq = respSeq
	now := time.Now()
	e.unsaved = e.unsaved || vvChanged || next.ServerSeq != e.att.ServerSeq
	if stored > 0 || (e.unsaved && now.Sub(e.persistedAt) >= attachmentFlush) {
		next.UpdatedAt = now
		if writeLater {
			a.write = b.attWrites.queue(next, ds.epoch)
		} else if err := b.writeAttachment(ctx, ds, &next); err != nil {
			return answer{}, fmt.Errorf("update attachment of %s: %w", clientID, err)
		}
		e.persistedAt, e.unsaved = now, false
	}
	e.att = next
	vv := &api.VersionVector{Vector: minSynced}
	if docVV != nil {
		// After a snapshot the SDK takes the vector as its own clocks, so it
		// is the document's, not the minimum.
		vv = docVV
	}
	a.pack = &api.ChangePack{
		DocumentKey:   ds.key,
		Checkpoint:    &api.Checkpoint{ServerSeq: respSeq, ClientSeq: e.att.ClientSeq},
		Changes:       changes,
		Snapshot:      snapshot,
		VersionVector: vv,
		IsRemoved:     ds.removed,
	}
	return a, nil
}

// push appends the changes the server has not stored yet and returns how
// many it stored. Changes at or below the stored client_seq are resends and
// skipped; the first new one must follow the stored client_seq, and the pack
// must not end below it.
func (b *Backend) push(ctx context.Context, p *database.ProjectInfo, ds *docState, clientID string, e *attState, changes []*api.Change, limit int) (int, error) {
	if len(changes) == 0 {
		return 0, nil
	}
	for attempt := 1; ; attempt++ {
		if !e.verified {
			if err := b.verify(ctx, ds, clientID, e); err != nil {
				return 0, err
			}
		}
		if last := changes[len(changes)-1].Id.ClientSeq; last < e.att.ClientSeq {
			// The client resends a strict prefix of what is stored: it has
			// lost changes of its own, and the next ones it makes would be
			// taken for resends and dropped.
			return 0, fmt.Errorf("client %s pushed up to client_seq %d, below stored %d: %w",
				clientID, last, e.att.ClientSeq, ErrInvalidClientSeq)
		}
		fresh := changes
		for len(fresh) > 0 && fresh[0].Id.ClientSeq <= e.att.ClientSeq {
			fresh = fresh[1:]
		}
		if len(fresh) == 0 {
			return 0, nil
		}
		if first := fresh[0].Id.ClientSeq; first != e.att.ClientSeq+1 {
			return 0, fmt.Errorf("client %s pushed client_seq %d after stored %d: %w",
				clientID, first, e.att.ClientSeq, ErrInvalidClientSeq)
		}
		if limit > 0 && len(fresh) > limit {
			fresh = fresh[:limit]
		}
		// The changes must apply before anything of them is stored: one
		// that does not would break every replica that pulls it.
		if err := b.applyPushed(ctx, p, ds, fresh); err != nil {
			return 0, fmt.Errorf("push of %s: %w", clientID, err)
		}
		batch := make([]*database.Change, len(fresh))
		rows := make([]database.Change, len(fresh))
		for i, c := range fresh {
			seq := ds.head + int64(i) + 1
			c.Id.ServerSeq = seq
			if c.Id.VersionVector == nil {
				c.Id.VersionVector = &api.VersionVector{}
			}
			rows[i] = database.Change{ServerSeq: seq, ActorID: clientID, ClientSeq: c.Id.ClientSeq, Body: c}
			batch[i] = &rows[i]
		}
		err := b.db.AppendChanges(ctx, ds.id, ds.epoch, batch)
		if err == nil {
			last := fresh[len(fresh)-1].Id
			ds.head += int64(len(fresh))
			ds.docSeq = ds.head
			b.keepRecent(ds, batch)
			e.att.ClientSeq = last.ClientSeq
			e.lamport = last.Lamport
			return len(fresh), nil
		}
		if errors.Is(err, database.ErrConflict) && attempt < maxAppendAttempts {
			// Another writer took these server_seq values: reload the head
			// and the client's stored client_seq, then dedup again.
			b.metrics.Conflicts.Add(1)
			b.dropDoc(ds)
			if err := b.reloadHead(ctx, ds, e); err != nil {
				return 0, err
			}
			continue
		}
		b.writeFailed(ds, err)
		return 0, fmt.Errorf("append %d changes of %s: %w", len(fresh), clientID, err)
	}
}

// applyPushed applies the changes about to be stored to the built document,
// refusing them (and dropping the document, which may be half-applied) when
// one does not apply or the document would outgrow its project's limit. The caller
// holds the lock and has not stored them yet.
func (b *Backend) applyPushed(ctx context.Context, p *database.ProjectInfo, ds *docState, changes []*api.Change) error {
	// Past the project's limit is accepted, as upstream: the SDK checks its
	// own edits and concurrent ones may together pass it. Only the hard
	// bound, far above, is enforced here.
	limit := b.sizeLimit(p) * b.hardFactor
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return err
	}
	apply := func() error {
		if err := doc.ApplyPushed(changes); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidChange, err)
		}
		return nil
	}
	if len(ds.schema.rules) > 0 {
		apply = func() error { return checkSchema(doc, ds.schema.rules, changes) }
	}
	if err := apply(); err != nil {
		b.dropDoc(ds)
		b.metrics.ChangesRefused.Add(int64(len(changes)))
		return err
	}
	if limit > 0 && hasOperations(changes) {
		if size := doc.Size().Total(); size > limit {
			b.dropDoc(ds)
			b.metrics.ChangesRefused.Add(int64(len(changes)))
			return fmt.Errorf("size %d > %d (%d times the limit): %w", size, limit, b.hardFactor, ErrDocumentSizeExceedsLimit)
		}
	}
	return nil
}

// hasOperations reports whether a change edits the document: presence-only
// changes pass the size limit, as in the SDK.
func hasOperations(changes []*api.Change) bool {
	for _, c := range changes {
		if len(c.GetOperations()) > 0 {
			return true
		}
	}
	return false
}

// reloadHead rereads the head after a conflict and marks every cached
// attachment for reconciliation with the log.
func (b *Backend) reloadHead(ctx context.Context, ds *docState, e *attState) error {
	info, err := b.db.ClaimDocument(ctx, ds.id, ds.epoch)
	if err != nil {
		b.writeFailed(ds, err)
		return fmt.Errorf("reload document %s after conflict: %w", ds.id, err)
	}
	ds.head = info.ServerSeq
	for _, a := range ds.atts {
		a.verified = false
	}
	return b.verify(ctx, ds, e.att.ClientID, e)
}

// verify raises the attachment's client_seq to the last one of the client
// found in the log since the attachment began, in case a previous write of
// the attachment was lost after its changes were stored.
func (b *Backend) verify(ctx context.Context, ds *docState, clientID string, e *attState) error {
	last, err := b.db.LastClientSeq(ctx, ds.id, clientID, e.att.AttachedAt)
	if err != nil {
		return fmt.Errorf("reconcile client_seq of %s: %w", clientID, err)
	}
	if last > e.att.ClientSeq {
		e.att.ClientSeq = last
		e.lamport = -1
	}
	e.verified = true
	return nil
}

// pull returns the stored changes after from, except the client's own of
// this attachment, each with a version vector. Changes made in an earlier
// attachment of a client that is attached again (the requester or another)
// come back without their presence: the SDK applies a change's presence to
// the change's actor as it is now, so an old PUT or CLEAR would overwrite
// its current presence or take it offline. A requester that watches the
// document gets no CLEAR of another client either (see leftMarker).
func (b *Backend) pull(ctx context.Context, ds *docState, clientID string, e *attState, from int64) ([]*api.Change, error) {
	stored, ok := ds.recent.span(from+1, ds.head)
	if ok {
		b.metrics.PullsFromWindow.Add(1)
	} else {
		var err error
		if stored, err = b.db.FindChanges(ctx, ds.id, from+1, ds.head); err != nil {
			return nil, fmt.Errorf("find changes %d..%d: %w", from+1, ds.head, err)
		}
	}
	watching := b.ps.Watching(ds.id, clientID)
	out := make([]*api.Change, 0, len(stored))
	for _, c := range stored {
		own := c.ActorID == clientID
		if own && c.ServerSeq > e.att.AttachedAt {
			continue
		}
		body := c.Body
		noVV := body.GetId().GetVersionVector() == nil
		// A presence from before its actor's current attachment is stale: the
		// SDK applies it to the actor as it is now, so the old CLEAR of a
		// client that left and came back would take it offline for good.
		oldPresence := body.GetPresenceChange() != nil && (own || attachedSince(ds, c.ActorID, c.ServerSeq))
		oldPresence = oldPresence || (watching && !own && leftMarker(ds, c.ActorID, body))
		if noVV || oldPresence {
			// Stored bodies are shared and immutable: fix a copy.
			body = proto.CloneOf(body)
			if body.Id == nil {
				body.Id = &api.ChangeID{ServerSeq: c.ServerSeq, ClientSeq: c.ClientSeq}
			}
			if noVV {
				body.Id.VersionVector = &api.VersionVector{}
			}
			if oldPresence {
				body.PresenceChange = nil
			}
		}
		out = append(out, body)
	}
	return out, nil
}

// leftMarker reports whether the change is the presence CLEAR of a client
// that is not attached now: the mark of its detach or deactivation. A client
// watching the document learns that on its stream: UNWATCHED, sent when the
// actor left, before any pull can return its CLEAR, or an initialization
// without it. The CLEAR itself must not reach it: the SDK applies a pull's
// response and the stream's events each as it arrives, so a response
// carrying the CLEAR that is applied after the WATCHED of the actor coming
// back (it re-attached while the pull was in flight) would take it offline
// at this client for good, whatever presence it sends later. The caller
// holds the lock.
func leftMarker(ds *docState, actorID string, c *api.Change) bool {
	return c.GetPresenceChange().GetType() == api.PresenceChange_CHANGE_TYPE_CLEAR && ds.atts[actorID] == nil
}

// attachedSince reports whether the actor is attached now through an
// attachment that began after the change at serverSeq.
func attachedSince(ds *docState, actorID string, serverSeq int64) bool {
	e := ds.atts[actorID]
	return e != nil && e.att.AttachedAt >= serverSeq
}

// writeFailed reacts to a failed write: a fenced owner gives the document up;
// any other failure leaves the outcome unsure, so the state is reloaded on
// the next call. The caller holds the lock.
func (b *Backend) writeFailed(ds *docState, err error) {
	if errors.Is(err, database.ErrFenced) {
		b.logger.Warn("lost document ownership", "document", ds.id, "error", err)
		b.forget(ds)
		b.ps.EndDocument(ds.id, fmt.Errorf("document %s: %w: %w", ds.id, ErrDocumentReleased, err))
		b.fenced(ds.id, DocName{Project: ds.project, Key: ds.key})
		return
	}
	ds.loaded = false
	b.dropDoc(ds)
}

// leftDocument ends the streams of a client that detached from or removed
// the document: one the server still believes open (its connection
// half-open) would otherwise keep the client counted as watching, and its
// next attach would announce no WATCHED to the others.
func (b *Backend) leftDocument(clientID, docID string) {
	b.ps.EndWatch(clientID, docID, fmt.Errorf("client %s left document %s: %w", clientID, docID, ErrDocumentNotAttached))
}

// endAttachment marks the client's attachment detached or removed and drops
// it from the attached set.
func (b *Backend) endAttachment(ctx context.Context, ds *docState, clientID string, e *attState, status database.AttachmentStatus) error {
	next := e.att
	next.Status = status
	next.UpdatedAt = time.Now()
	if err := b.writeAttachment(ctx, ds, &next); err != nil {
		return fmt.Errorf("mark attachment of %s %s: %w", clientID, status, err)
	}
	ds.dropAttachment(clientID)
	if len(ds.atts) == 0 {
		// Nobody is attached: keep no state for it; a later call reloads.
		b.forget(ds)
	}
	return nil
}

// detachOnDeactivate detaches a deactivating client from one document: a
// presence clear change made by the server for the client lets the others
// drop its presence.
func (b *Backend) detachOnDeactivate(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID string) error {
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if errors.Is(err, database.ErrDocumentNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("detach %s: %w", docID, err)
	}
	defer ds.unlock()
	e := ds.atts[clientID]
	if e == nil {
		return nil
	}
	// A client attached before a compaction has no presence in the new
	// history to clear.
	if !ds.removed && ds.checkEpoch(e) == nil {
		if !e.verified {
			if err := b.verify(ctx, ds, clientID, e); err != nil {
				return fmt.Errorf("detach %s: %w", docID, err)
			}
		}
		lamport, err := b.lastLamport(ctx, ds, clientID, e)
		if err != nil {
			return fmt.Errorf("detach %s: %w", docID, err)
		}
		actor, err := hex.DecodeString(clientID)
		if err != nil {
			return fmt.Errorf("detach %s: client ID %q is not hex: %w", docID, clientID, ErrInvalidChangePack)
		}
		clearChange := &api.Change{
			Id: &api.ChangeID{
				ClientSeq:     e.att.ClientSeq + 1,
				Lamport:       lamport,
				ActorId:       actor,
				VersionVector: &api.VersionVector{},
			},
			PresenceChange: &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR},
		}
		stored, err := b.push(ctx, p, ds, clientID, e, []*api.Change{clearChange}, 0)
		if stored > 0 {
			b.metrics.ChangesStored.Add(int64(stored))
			b.publishChanged(docID, clientID)
		}
		if err != nil {
			return fmt.Errorf("detach %s: %w", docID, err)
		}
	}
	status, err := b.removeIfLast(ctx, ds, clientID, p)
	if err != nil {
		return fmt.Errorf("detach %s: %w", docID, err)
	}
	if err := b.endAttachment(ctx, ds, clientID, e, status); err != nil {
		return fmt.Errorf("detach %s: %w", docID, err)
	}
	return nil
}

// lastLamport returns the lamport of the client's last stored change of this
// attachment, reading the log when the cache does not know it.
func (b *Backend) lastLamport(ctx context.Context, ds *docState, clientID string, e *attState) (int64, error) {
	if e.lamport >= 0 {
		return e.lamport, nil
	}
	if e.att.ClientSeq == 0 {
		return 0, nil
	}
	changes, err := b.db.FindChanges(ctx, ds.id, e.att.AttachedAt+1, ds.head)
	if err != nil {
		return 0, fmt.Errorf("find last lamport of %s: %w", clientID, err)
	}
	for i := len(changes) - 1; i >= 0; i-- {
		if changes[i].ActorID == clientID {
			e.lamport = changes[i].Body.GetId().GetLamport()
			return e.lamport, nil
		}
	}
	return 0, nil
}

// editsRoot reports whether the stored changes, the stored ones of changes
// up to client_seq last (a pack's client_seq values are consecutive), carry
// operations: a presence-only change leaves the document's content alone.
func editsRoot(changes []*api.Change, last uint32, stored int) bool {
	first := int64(last) - int64(stored) + 1
	for _, c := range changes {
		if seq := int64(c.GetId().GetClientSeq()); seq >= first && seq <= int64(last) && len(c.GetOperations()) > 0 {
			return true
		}
	}
	return false
}
