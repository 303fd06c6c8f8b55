package backend_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
)

// heldAttachmentDB holds the attachment write of one client at one
// client_seq until the test releases it, and records the order in which
// attachment writes reach the database.
type heldAttachmentDB struct {
	database.Database
	client    string
	clientSeq uint32
	entered   chan struct{}
	release   chan struct{}

	mu     sync.Mutex
	writes []database.AttachmentStatus
}

func (d *heldAttachmentDB) UpdateAttachment(ctx context.Context, a *database.Attachment, epoch int64) error {
	if a.ClientID == d.client && a.ClientSeq == d.clientSeq && a.Status == database.Attached {
		close(d.entered)
		<-d.release
	}
	err := d.Database.UpdateAttachment(ctx, a, epoch)
	if a.ClientID == d.client {
		d.mu.Lock()
		d.writes = append(d.writes, a.Status)
		d.mu.Unlock()
	}
	return err
}

// holdAttachmentWrite attaches clients a and c to a document and starts a
// PushPull of a's first change, whose attachment write is held.
func holdAttachmentWrite(t *testing.T) (b *backend.Backend, db *heldAttachmentDB, a, c, docID string, pushDone chan error) {
	t.Helper()
	ctx := context.Background()
	db = &heldAttachmentDB{Database: memory.New(), clientSeq: 1, entered: make(chan struct{}), release: make(chan struct{})}
	b, _ = newBackend(t, db)
	a, c, docID = attachTwo(t, b)
	db.client = a
	pushDone = make(chan error, 1)
	go func() {
		_, err := b.PushPull(ctx, defaultProject, 0, a, docID, pack(0, 1, edit(t, a, 1, 1)), false)
		pushDone <- err
	}()
	<-db.entered
	t.Cleanup(func() {
		select {
		case <-db.release:
		default:
			close(db.release)
		}
	})
	return b, db, a, c, docID, pushDone
}

// A PushPull's attachment write happens after its change is stored and the
// document's lock is released: another client's call on the document is
// served meanwhile and pulls the change, and the PushPull answers only once
// its write is done.
func TestAttachmentWriteLeavesTheLockFree(t *testing.T) {
	ctx := context.Background()
	b, db, _, c, docID, pushDone := holdAttachmentWrite(t)

	resp, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(0, 0), false)
	require.NoError(t, err)
	require.Len(t, resp.Changes, 1, "the other client pulls the stored change while the write is held")
	select {
	case err := <-pushDone:
		t.Fatalf("the PushPull answered before its attachment write was done: %v", err)
	default:
	}

	close(db.release)
	require.NoError(t, <-pushDone)
}

// A detach waits for the attachment write a PushPull left for after the
// lock: the stored attachment ends detached, never attached again by the
// late checkpoint.
func TestDetachWaitsForTheQueuedAttachmentWrite(t *testing.T) {
	ctx := context.Background()
	b, db, a, _, docID, pushDone := holdAttachmentWrite(t)

	detachDone := make(chan error, 1)
	go func() {
		_, err := b.DetachDocument(ctx, defaultProject, 0, a, docID, pack(1, 1))
		detachDone <- err
	}()
	poll.UntilTrue(t, 10*time.Second, "the detach waits for the queued write", func() bool {
		return backend.AttachmentWritesWaited(b) == 1
	})
	select {
	case err := <-pushDone:
		t.Fatalf("the PushPull answered before its attachment write was done: %v", err)
	default:
	}
	close(db.release)
	require.NoError(t, <-pushDone)
	require.NoError(t, <-detachDone)

	db.mu.Lock()
	writes := append([]database.AttachmentStatus(nil), db.writes...)
	db.mu.Unlock()
	require.Equal(t, []database.AttachmentStatus{database.Attached, database.Detached}, writes,
		"the PushPull's checkpoint, then the detach")
	att, err := db.FindAttachment(ctx, a, docID)
	require.NoError(t, err)
	require.Equal(t, database.Detached, att.Status)
	require.Equal(t, uint32(1), att.ClientSeq)
}
