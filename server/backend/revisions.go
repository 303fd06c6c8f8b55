package backend

import (
	"context"
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// Revisions are named copies of a document's content. The owner makes
// them, from the document it holds built, and restores them as a change of
// its own that every attached client pulls like any other.

// ErrRevisionNotRestorable: the revision keeps neither the element a restore
// is built from nor YSON this server reads (a revision stored by upstream
// Yorkie keeps YSON only, which serves unless it holds what the YSON parser
// does not read, such as a DedupCounter).
var ErrRevisionNotRestorable = errors.New("revision has no content to restore from")

// systemActor is the actor of the changes the server makes itself (a
// restore): the all-zero initial actor, which every document knows.
var systemActor = crdt.InitialActorID.String()

// CreateRevision stores the document's content at its head as a revision
// with the label and description; docID names a document of project p.
// clientID, when not empty, must be an activated client of p.
func (b *Backend) CreateRevision(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID, label, description string) (*database.Revision, error) {
	if err := b.checkOpen(); err != nil {
		return nil, err
	}
	if clientID != "" {
		if err := b.ensureActivated(ctx, p, clientID); err != nil {
			return nil, fmt.Errorf("create revision: %w", err)
		}
	}
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return nil, fmt.Errorf("create revision: %w", err)
	}
	defer ds.unlock()
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return nil, fmt.Errorf("create revision of document %s: %w", docID, err)
	}
	rev, err := b.storeRevision(ctx, ds.epoch, ds.project, docID, ds.head, doc, label, description)
	if err != nil {
		b.writeFailed(ds, err)
		return nil, fmt.Errorf("create revision: %w", err)
	}
	return rev, nil
}

// storeRevision stores doc, the document's state at seq, as a revision.
func (b *Backend) storeRevision(ctx context.Context, epoch int64, projectID, docID string, seq int64, doc *document.Document,
	label, description string,
) (*database.Revision, error) {
	content, yson, err := doc.Revision()
	if err != nil {
		return nil, fmt.Errorf("document %s: %w", docID, err)
	}
	rev, err := b.db.CreateRevision(ctx, epoch, &database.Revision{
		ProjectID:   projectID,
		DocID:       docID,
		Label:       label,
		Description: description,
		Snapshot:    []byte(yson),
		Content:     content,
		ServerSeq:   seq,
	})
	if err != nil {
		return nil, err
	}
	b.metrics.RevisionsStored.Add(1)
	return rev, nil
}

// ListRevisions returns a page of the document's revisions, without their
// content. clientID as in CreateRevision.
func (b *Backend) ListRevisions(ctx context.Context, p *database.ProjectInfo, clientID, docID string, paging database.RevisionPaging) ([]*database.Revision, error) {
	if err := b.checkRevisionCall(ctx, p, clientID, docID); err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	revs, err := b.db.ListRevisions(ctx, p.ID, docID, paging)
	if err != nil {
		return nil, fmt.Errorf("list revisions: %w", err)
	}
	return revs, nil
}

// GetRevision returns one of the document's revisions whole.
// database.ErrRevisionNotFound if it has none with the ID. clientID as in
// CreateRevision.
func (b *Backend) GetRevision(ctx context.Context, p *database.ProjectInfo, clientID, docID, revisionID string) (*database.Revision, error) {
	if err := b.checkRevisionCall(ctx, p, clientID, docID); err != nil {
		return nil, fmt.Errorf("get revision: %w", err)
	}
	rev, err := b.db.FindRevision(ctx, p.ID, docID, revisionID)
	if err != nil {
		return nil, fmt.Errorf("get revision: %w", err)
	}
	return rev, nil
}

// checkRevisionCall checks a read of revisions: the client, when named,
// is activated, and the document is one of project p (which the call
// names: project.ErrMissing otherwise).
func (b *Backend) checkRevisionCall(ctx context.Context, p *database.ProjectInfo, clientID, docID string) error {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if clientID != "" {
		if err := b.ensureActivated(ctx, p, clientID); err != nil {
			return err
		}
	}
	_, err := b.DocumentKey(ctx, p, docID)
	return err
}

// RestoreRevision brings the document back to a revision's content: the
// owner makes the change that replaces the root with it (see
// document.RestoreChange), applies and stores it like a pushed one, and tells
// the watchers, so every attached client pulls it and converges. A removed
// document is refused with ErrDocumentRemoved, an unknown revision with
// database.ErrRevisionNotFound; either way nothing changes. clientID as in
// CreateRevision.
func (b *Backend) RestoreRevision(ctx context.Context, p *database.ProjectInfo, epoch int64, clientID, docID, revisionID string) (err error) {
	if err := b.checkOpen(); err != nil {
		return err
	}
	if clientID != "" {
		if err := b.ensureActivated(ctx, p, clientID); err != nil {
			return fmt.Errorf("restore revision: %w", err)
		}
	}
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return fmt.Errorf("restore revision: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, ErrDocumentRemoved)
	}
	rev, err := b.db.FindRevision(ctx, ds.project, docID, revisionID)
	if err != nil {
		return fmt.Errorf("restore revision: %w", err)
	}
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, err)
	}
	change, err := restoreChange(doc, rev)
	if err != nil {
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, err)
	}
	if err := b.applyPushed(ctx, p, ds, []*api.Change{change}); err != nil {
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, err)
	}
	// The server's changes of a document are numbered like a client's, so
	// that (actor, client_seq) names one change of the log.
	last, err := b.db.LastClientSeq(ctx, ds.id, systemActor, 0)
	if err != nil {
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, err)
	}
	seq := ds.head + 1
	change.Id.ServerSeq, change.Id.ClientSeq = seq, last+1
	row := &database.Change{ServerSeq: seq, ActorID: systemActor, ClientSeq: change.Id.ClientSeq, Body: change}
	if err := b.db.AppendChanges(ctx, ds.id, ds.epoch, []*database.Change{row}); err != nil {
		// The document holds the change now: the state is reloaded on the
		// next call, whatever became of the write.
		b.writeFailed(ds, err)
		return fmt.Errorf("restore revision %s of document %s: %w", revisionID, docID, err)
	}
	ds.head, ds.docSeq = seq, seq
	b.keepRecent(ds, []*database.Change{row})
	b.metrics.ChangesStored.Add(1)
	b.metrics.RevisionsRestored.Add(1)
	b.publishChanged(ds.id, systemActor)
	if b.changed != nil {
		b.changed(ctx, p, ds.key)
	}
	b.maybeSnapshot(ctx, p, ds, ds.synced.vector(nil))
	return nil
}

// autoRevision stores the state a snapshot run just stored as a revision
// when the document's project keeps one at every snapshot
// (AutoRevisionEnabled), labelled as upstream labels them. A failure is
// logged: the snapshot stands.
func (b *Backend) autoRevision(ctx context.Context, job snapshotJob, doc *document.Document) {
	p := job.project
	if p == nil || !p.AutoRevisionEnabled {
		return
	}
	label := fmt.Sprintf("snapshot-%d", job.seq)
	description := fmt.Sprintf("Auto created revision of snapshot #%d", job.seq)
	if _, err := b.storeRevision(ctx, job.epoch, p.ID, job.docID, job.seq, doc, label, description); err != nil {
		b.logger.Warn("auto revision", "document", job.docID, "server_seq", job.seq, "error", err)
	}
}

// restoreChange makes the change that restores rev: from its content, or,
// for a revision kept as YSON only (imported from upstream Yorkie), from
// its YSON.
func restoreChange(doc *document.Document, rev *database.Revision) (*api.Change, error) {
	if len(rev.Content) > 0 {
		return doc.RestoreChange(rev.Content)
	}
	root, err := yson.ParseObject(string(rev.Snapshot))
	if err != nil {
		return nil, fmt.Errorf("%w: its YSON: %w", ErrRevisionNotRestorable, err)
	}
	return doc.RestoreChangeFromYSON(root)
}
