package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// ErrDocumentAttached refuses removing a document by admin while clients
// are attached to it, unless the removal is forced.
var ErrDocumentAttached = errors.New("document is attached")

// adminPublisher is the publisher of the events of admin calls: the
// initial actor, as upstream's.
const adminPublisher = "000000000000000000000000"

// Summary is what the AdminService shows of a document: the owner's
// current state, not a rebuild.
type Summary struct {
	// Root is the document as the SDK's toSortedJSON writes it; empty
	// unless asked for.
	Root string
	// Size is the SDK's getDocSize of the document; zero unless Root was
	// asked for.
	Size crdt.DocSize
	// Attached counts the clients attached now.
	Attached int
	// Presences are the attached clients' presences by client ID; nil
	// unless asked for.
	Presences map[string]map[string]string
	// ServerSeq is the head the summary was taken at.
	ServerSeq int64
	// GarbageLen counts the tombstones not collected yet, and SnapshotSeq
	// is the server_seq of the newest snapshot stored or being stored (0:
	// none); both only with Root.
	GarbageLen  int
	SnapshotSeq int64
}

// DocumentSummary returns the summary of a live document this node owns,
// from its built document (built once, then kept and brought forward as
// for PushPull; never rebuilt per call). The document's JSON is encoded
// once per head and kept while the head does not move. docID names a
// document of project p.
func (b *Backend) DocumentSummary(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*Summary, error) {
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return nil, fmt.Errorf("document summary: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return nil, fmt.Errorf("document %s: %w", docID, database.ErrDocumentNotFound)
	}
	s := &Summary{Attached: len(ds.atts), ServerSeq: ds.head}
	if !root && !presences {
		return s, nil
	}
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return nil, fmt.Errorf("document summary: %w", err)
	}
	if root {
		if ds.jsonOf != doc || ds.jsonSeq != ds.docSeq {
			ds.json, ds.jsonOf, ds.jsonSeq = doc.JSON(), doc, ds.docSeq
		}
		s.Root, s.Size = ds.json, doc.Size()
		s.GarbageLen, s.SnapshotSeq = doc.GarbageLen(), ds.snapSeq
	}
	if presences {
		s.Presences = make(map[string]map[string]string, len(ds.atts))
		for actor, p := range doc.Presences() {
			if _, ok := ds.atts[actor.String()]; ok {
				s.Presences[actor.String()] = p
			}
		}
	}
	return s, nil
}

// RemoveDocumentByAdmin removes a live document this node owns. It refuses
// with ErrDocumentAttached while clients are attached, unless force; the
// attached clients then learn the removal on their next PushPull, which the
// event published here prompts. docID names a document of project p.
func (b *Backend) RemoveDocumentByAdmin(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, force bool) error {
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return fmt.Errorf("remove document by admin: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return fmt.Errorf("document %s: %w", docID, database.ErrDocumentNotFound)
	}
	if len(ds.atts) > 0 && !force {
		return fmt.Errorf("remove document %s with %d clients attached: %w", docID, len(ds.atts), ErrDocumentAttached)
	}
	if err := b.db.RemoveDocument(ctx, docID, ds.epoch); err != nil {
		b.writeFailed(ds, err)
		return fmt.Errorf("remove document by admin: %w", err)
	}
	ds.removed = true
	b.publishChanged(docID, adminPublisher)
	return nil
}
