package backend

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// A PushPull writes its client's attachment (checkpoint, client_seq,
// vector) after its changes are stored. That write is not what makes the
// changes durable (the log is, and a lost attachment write is made good
// from the log: verify), so it is sent after the document's lock is
// released: other clients' calls on the document no longer queue behind a
// database round trip that only concerns this client. The call still
// answers only once the write is done, and reports its failure as before.
//
// Writes of one attachment stay in the order they were made under the lock:
// each waits for the one queued before it, and every write made under the
// lock (attach, detach, a release of the document) first waits for the
// queued ones, so a stale checkpoint never lands after a detach.

// attWrite is an attachment write queued under the document's lock, to be
// sent after it is released.
type attWrite struct {
	att   database.Attachment
	epoch int64
	prev  *attWrite // the write of the same attachment queued before, or nil
	done  chan struct{}
}

// attWrites holds, per document and client, the last attachment write
// queued and not yet done.
type attWrites struct {
	mu    sync.Mutex
	tails map[string]map[string]*attWrite
	// waiting counts the calls waiting in wait for a queued write.
	waiting atomic.Int32
}

// queue registers a write of att after the ones already queued for the
// same attachment. The caller holds the document's lock.
func (q *attWrites) queue(att database.Attachment, epoch int64) *attWrite {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tails == nil {
		q.tails = map[string]map[string]*attWrite{}
	}
	byClient := q.tails[att.DocID]
	if byClient == nil {
		byClient = map[string]*attWrite{}
		q.tails[att.DocID] = byClient
	}
	w := &attWrite{att: att, epoch: epoch, prev: byClient[att.ClientID], done: make(chan struct{})}
	byClient[att.ClientID] = w
	return w
}

// finish marks w done.
func (q *attWrites) finish(w *attWrite) {
	q.mu.Lock()
	if byClient := q.tails[w.att.DocID]; byClient[w.att.ClientID] == w {
		delete(byClient, w.att.ClientID)
		if len(byClient) == 0 {
			delete(q.tails, w.att.DocID)
		}
	}
	q.mu.Unlock()
	close(w.done)
}

// wait returns once the writes queued so far for the client's attachment
// to the document are done; every attachment of the document when clientID
// is empty. The caller holds the document's lock, so no write is queued
// meanwhile.
func (q *attWrites) wait(ctx context.Context, docID, clientID string) error {
	q.mu.Lock()
	var pending []*attWrite
	for c, w := range q.tails[docID] {
		if clientID == "" || c == clientID {
			pending = append(pending, w)
		}
	}
	q.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	q.waiting.Add(1)
	defer q.waiting.Add(-1)
	for _, w := range pending {
		select {
		case <-w.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for the attachment writes of document %s: %w", docID, ctx.Err())
		}
	}
	return nil
}

// writeQueued sends a queued attachment write, after the lock was
// released. A failure is handled as under the lock (writeFailed), once the
// lock is taken again.
func (b *Backend) writeQueued(ctx context.Context, ds *docState, w *attWrite) error {
	if w.prev != nil {
		<-w.prev.done
	}
	err := b.db.UpdateAttachment(ctx, &w.att, w.epoch)
	b.attWrites.finish(w)
	if err == nil {
		return nil
	}
	select {
	case ds.lock <- struct{}{}:
		b.writeFailed(ds, err)
		ds.unlock()
	case <-ctx.Done():
		// The document is reloaded anyway if the write's outcome matters:
		// the next write fails the same way.
	}
	return fmt.Errorf("update attachment of %s: %w", w.att.ClientID, err)
}

// writeAttachment writes att under the document's lock, after the writes
// of the same attachment queued before.
func (b *Backend) writeAttachment(ctx context.Context, ds *docState, att *database.Attachment) error {
	if err := b.attWrites.wait(ctx, ds.id, att.ClientID); err != nil {
		return err
	}
	if err := b.db.UpdateAttachment(ctx, att, ds.epoch); err != nil {
		b.writeFailed(ds, err)
		return err
	}
	return nil
}
