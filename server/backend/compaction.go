package backend

import (
	"context"
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

var (
	// ErrEpochMismatch: the client attached the document before a
	// compaction replaced its history; it must detach and attach again. The
	// text carries upstream's "epoch mismatch".
	ErrEpochMismatch = errors.New("epoch mismatch")
	// ErrCannotCompact: the document's content cannot be carried by one
	// change (see document.ErrCompactionMismatch). Nothing changed.
	ErrCannotCompact = errors.New("document cannot be compacted")
)

// initialActorHex is the actor of a compacted change, the initial actor.
const initialActorHex = "000000000000000000000000"

// checkEpoch fails with ErrEpochMismatch when the attachment began before
// the document's last compaction. The caller holds the lock.
func (ds *docState) checkEpoch(e *attState) error {
	if e.att.DocEpoch != ds.docEpoch {
		return fmt.Errorf("client epoch(%d) != document epoch(%d): %w", e.att.DocEpoch, ds.docEpoch, ErrEpochMismatch)
	}
	return nil
}

// exchangeOrLeave runs the pack of a client that detaches or removes the
// document, unless it attached before a compaction: its changes and
// checkpoint belong to the old history, so nothing is stored or sent and
// the answer only acknowledges the pack, as upstream lets such a client
// leave. The caller holds the lock.
func (b *Backend) exchangeOrLeave(ctx context.Context, p *database.ProjectInfo, ds *docState, clientID string, e *attState, pack *api.ChangePack) (answer, error) {
	if ds.checkEpoch(e) == nil {
		return b.exchange(ctx, p, ds, clientID, e, pack, false, 0, false)
	}
	return answer{pack: &api.ChangePack{
		DocumentKey: ds.key,
		Checkpoint:  &api.Checkpoint{ServerSeq: pack.Checkpoint.GetServerSeq(), ClientSeq: pack.Checkpoint.GetClientSeq()},
		IsRemoved:   ds.removed,
	}}, nil
}

// CompactDocument replaces the document's history with one change that
// builds its content, as upstream's compaction: the old changes and
// snapshots go, the document epoch goes up, clients attached before get
// ErrEpochMismatch on their next PushPull and late joiners attach the
// compacted document. Unless force, a document some client has attached is
// refused with ErrDocumentAttached. It reports false when there was nothing
// to compact (an empty log, or one that is a compaction's change already).
// epoch is this node's owner epoch, which fences the writes; docID names a
// document of project p.
func (b *Backend) CompactDocument(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, force bool) (bool, error) {
	if err := b.checkOpen(); err != nil {
		return false, err
	}
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return false, fmt.Errorf("compact document: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return false, fmt.Errorf("compact document %s: %w", docID, ErrDocumentRemoved)
	}
	if !force && len(ds.atts) > 0 {
		return false, fmt.Errorf("compact document %s: %d clients attached: %w", docID, len(ds.atts), ErrDocumentAttached)
	}
	if ds.head == 0 || ds.head == ds.compactedSeq {
		return false, nil
	}
	// A snapshot being taken of the old history must not land after it.
	if err := ds.snap.quiesce(ctx); err != nil {
		return false, fmt.Errorf("compact document %s: %w", docID, err)
	}
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return false, fmt.Errorf("compact document %s: %w", docID, err)
	}
	body, err := document.CompactChange(doc)
	if errors.Is(err, document.ErrCompactionMismatch) {
		return false, fmt.Errorf("compact document %s: %w: %w", docID, ErrCannotCompact, err)
	}
	if err != nil {
		return false, fmt.Errorf("compact document %s: %w", docID, err)
	}
	seq := ds.head + 1
	body.Id.ServerSeq = seq
	info, err := b.db.CompactDocument(ctx, ds.id, ds.epoch, ds.docEpoch, &database.Change{
		ServerSeq: seq, ActorID: initialActorHex, ClientSeq: body.Id.ClientSeq, Body: body,
	})
	if err != nil {
		b.writeFailed(ds, err)
		return false, fmt.Errorf("compact document %s: %w", docID, err)
	}
	ds.head, ds.docEpoch, ds.compactedSeq = info.ServerSeq, info.DocEpoch, info.CompactedSeq
	ds.snapSeq = ds.head
	// The built document holds the old history's elements: the next use
	// builds the compacted one.
	b.dropDoc(ds)
	b.metrics.Compactions.Add(1)
	// Clients still attached (forced) pull, and learn the mismatch.
	b.publishChanged(ds.id, initialActorHex)
	return true, nil
}

// quiesce waits for the snapshot run under way, if any, and drops the one
// due next: the caller holds the document's lock, so no other is submitted.
func (s *docSnapshots) quiesce(ctx context.Context) error {
	s.mu.Lock()
	s.next = nil
	done := s.done
	running := s.running
	s.mu.Unlock()
	if running && done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("wait for a snapshot: %w", ctx.Err())
		}
	}
	s.dropBase()
	return nil
}
