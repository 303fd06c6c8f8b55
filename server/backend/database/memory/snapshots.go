package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/snapcodec"
)

// snapshotStore holds the documents' snapshots compressed, apart from the
// documents so that memory.go need not know about them. Its zero value is
// ready to use.
//
// Lock order: doc.mu before snapshotStore.mu.
type snapshotStore struct {
	codec snapcodec.Codec

	mu sync.RWMutex
	// byDoc holds each document's newest snapshots, oldest first, at most
	// database.SnapshotsKept of them.
	byDoc map[string][]*storedSnapshot
}

// storedSnapshot is a snapshot at rest. Its fields never change once stored.
type storedSnapshot struct {
	serverSeq     int64
	lamport       int64
	versionVector map[string]int64
	packed        []byte
	rawLen        int
	createdAt     time.Time
}

// SaveSnapshot stores s unless a snapshot of its server_seq is stored
// already, then drops the document's snapshots beyond the newest
// database.SnapshotsKept.
func (db *DB) SaveSnapshot(ctx context.Context, docID string, epoch int64, s *database.Snapshot) error {
	if err := db.check(ctx, "save snapshot"); err != nil {
		return err
	}
	if s == nil {
		return errors.New("save snapshot: nil snapshot")
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	// Compression is the slow part: done before any lock is taken.
	packed, err := db.snaps.codec.Compress(s.Data)
	if err != nil {
		return fmt.Errorf("save snapshot of %q at %d: %w", docID, s.ServerSeq, err)
	}
	if err := db.check(ctx, "save snapshot"); err != nil {
		return err
	}
	stored := &storedSnapshot{
		serverSeq:     s.ServerSeq,
		lamport:       s.Lamport,
		versionVector: maps.Clone(s.VersionVector),
		packed:        packed,
		rawLen:        len(s.Data),
		createdAt:     time.Now(),
	}

	// Holding the document's lock orders the fence check with claims.
	d.mu.RLock()
	defer d.mu.RUnlock()
	if err := d.fenced(epoch); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if head := d.head(); s.ServerSeq <= d.log.base || s.ServerSeq > head {
		return fmt.Errorf("save snapshot of %q: server_seq %d outside the log %d..%d", docID, s.ServerSeq, d.log.base+1, head)
	}
	db.snaps.mu.Lock()
	defer db.snaps.mu.Unlock()
	if db.snaps.byDoc == nil {
		db.snaps.byDoc = make(map[string][]*storedSnapshot)
	}
	list := db.snaps.byDoc[docID]
	i := sort.Search(len(list), func(i int) bool { return list[i].serverSeq >= s.ServerSeq })
	if i < len(list) && list[i].serverSeq == s.ServerSeq {
		return nil // the first snapshot of a server_seq stays
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = stored
	if extra := len(list) - database.SnapshotsKept; extra > 0 {
		// A fresh slice, so that the dropped snapshots are not kept alive
		// by the backing array.
		list = append([]*storedSnapshot(nil), list[extra:]...)
	}
	db.snaps.byDoc[docID] = list
	return nil
}

// FindSnapshot returns the document's newest snapshot with ServerSeq <=
// atOrBefore, decompressed into memory of the caller's own.
func (db *DB) FindSnapshot(ctx context.Context, docID string, atOrBefore int64) (*database.Snapshot, error) {
	if err := db.check(ctx, "find snapshot"); err != nil {
		return nil, err
	}
	db.snaps.mu.RLock()
	var found *storedSnapshot
	for _, s := range db.snaps.byDoc[docID] {
		if s.serverSeq <= atOrBefore {
			found = s // the list is oldest first: keep the last that fits
		}
	}
	db.snaps.mu.RUnlock()
	if found == nil {
		return nil, fmt.Errorf("find snapshot of %q at or before %d: %w", docID, atOrBefore, database.ErrSnapshotNotFound)
	}
	data, err := db.snaps.codec.Decompress(found.packed, found.rawLen)
	if err != nil {
		return nil, fmt.Errorf("find snapshot of %q at %d: %w", docID, found.serverSeq, err)
	}
	return &database.Snapshot{
		ServerSeq:     found.serverSeq,
		Lamport:       found.lamport,
		VersionVector: maps.Clone(found.versionVector),
		Data:          data,
		CreatedAt:     found.createdAt,
	}, nil
}
