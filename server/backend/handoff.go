package backend

import (
	"context"
	"fmt"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// DocumentIDs lists the IDs of the documents of the project served here
// under the key (a removed document's key may have started a new one): what
// a draining node asks the key's next owner to build.
func (b *Backend) DocumentIDs(projectID, key string) []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.names.ids(DocName{Project: projectID, Key: key})
}

// WarmDocument builds a document of project p from the database, without claiming it, and keeps it built: a draining
// node has its successor do this before it moves the document's binding
// there, so the calls the successor then serves find the document built
// rather than wait on the build. It returns the server_seq it was built up
// to. A document this node already serves is left as it is.
//
// The warm copy is a starting point, never served as it is: the first call
// routed here with the new owner epoch loads the document as usual,
// claiming it (which fences the old owner's later writes), and brings the
// copy forward through the changes stored after it. A compaction in between
// (the document epoch changed) makes that load drop the copy and build
// afresh.
func (b *Backend) WarmDocument(ctx context.Context, p *database.ProjectInfo, docID string) (int64, error) {
	if err := b.checkOpen(); err != nil {
		return 0, err
	}
	pid, err := projectID(p)
	if err != nil {
		return 0, fmt.Errorf("warm document %s: %w", docID, err)
	}
	info, err := b.db.FindDocument(ctx, pid, docID)
	if err != nil {
		return 0, fmt.Errorf("warm document %s: %w", docID, err)
	}
	if !info.RemovedAt.IsZero() {
		return 0, fmt.Errorf("warm document %s: %w", docID, ErrDocumentRemoved)
	}
	b.rememberName(info)
	ds, err := b.lockState(ctx, docID)
	if err != nil {
		return 0, fmt.Errorf("warm: %w", err)
	}
	defer ds.unlock()
	if ds.loaded {
		return ds.head, nil
	}
	if ds.doc != nil && ds.docEpoch == info.DocEpoch && ds.docSeq <= info.ServerSeq {
		if err := b.replay(ctx, docID, ds.doc, ds.docSeq, info.ServerSeq); err != nil {
			b.dropDoc(ds)
			return 0, fmt.Errorf("warm document %s: %w", docID, err)
		}
	} else {
		doc, snapSeq, err := b.docAt(ctx, docID, info.ServerSeq)
		if err != nil {
			b.dropDoc(ds)
			return 0, fmt.Errorf("warm document %s: %w", docID, err)
		}
		b.dropDoc(ds)
		ds.doc, ds.snapSeq = doc, max(ds.snapSeq, snapSeq)
		b.metrics.DocumentsBuilt.Add(1)
	}
	ds.docSeq, ds.docEpoch = info.ServerSeq, info.DocEpoch
	b.metrics.DocumentsWarmed.Add(1)
	b.cache.touch(ds)
	return ds.docSeq, nil
}
