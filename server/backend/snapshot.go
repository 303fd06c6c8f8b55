package backend

import (
	"context"
	"reflect"
	"slices"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// maxCollections bounds the live document's collections a snapshot answer
// repeats (see snapshotJob.collections); older ones predate its base.
const maxCollections = 16

// snapshotSaveTimeout bounds storing one snapshot after its call has been
// answered or abandoned.
const snapshotSaveTimeout = 30 * time.Second

// collect purges the built document's tombstones that minSynced covers. It
// runs only when there is garbage and the minimum is a new one since the last
// collection: the minimum's map is replaced whenever any of its entries
// changes, so an unchanged map means nothing new can be collected.
func (b *Backend) collect(ds *docState, minSynced map[string]int64) {
	doc := ds.doc
	if doc == nil || doc.Size().GC.Total() == 0 || sameMap(minSynced, ds.gcWith) {
		return
	}
	ds.gcWith = minSynced
	vv, err := document.VersionVectorFromPB(&api.VersionVector{Vector: minSynced})
	if err != nil {
		// The minimum holds only keys the document accepted; nothing to do.
		return
	}
	if n := doc.GarbageCollect(vv); n > 0 {
		b.metrics.GarbageCollected.Add(int64(n))
		ds.collected++
		if len(ds.collections) == maxCollections {
			ds.collections = slices.Delete(ds.collections, 0, 1)
		}
		ds.collections = append(ds.collections, collection{seq: ds.head, vv: minSynced})
	}
}

// sameMap reports whether a and b are the same map value (not equal
// contents): the minimum vector is shared and replaced, never mutated.
func sameMap(a, b map[string]int64) bool {
	if a == nil || b == nil {
		return false
	}
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// maybeSnapshot hands a snapshot of the head to the document's snapshotter
// when the head is an interval past the last one. Only what identifies the
// state (its server_seq, version vector and the minimum synced vector
// garbage is collected with) is taken under the lock; the snapshotter
// rebuilds that state from the stored snapshot and log, off the lock, and
// encodes and stores it there. The caller holds the lock and has stored the
// changes up to the head.
func (b *Backend) maybeSnapshot(ctx context.Context, p *database.ProjectInfo, ds *docState, minSynced map[string]int64) {
	if interval := b.snapIntervalFor(p); interval <= 0 || ds.doc == nil || ds.docSeq != ds.head || ds.head-ds.snapSeq < interval {
		return
	}
	start := time.Now()
	defer func() { b.metrics.SnapshotLockNanos.Add(int64(time.Since(start))) }()
	// Advanced now, so a failed save is tried again an interval later rather
	// than on every call.
	ds.snapSeq = ds.head
	b.submitSnapshot(ds.snap, snapshotJob{
		ctx:       context.WithoutCancel(ctx),
		project:   p,
		docID:     ds.id,
		epoch:     ds.epoch,
		seq:       ds.head,
		vv:        ds.doc.VersionVector(),
		minSynced: minSynced,
	})
}

// snapshotAnswer prepares the answer to a client far behind: the document
// at the head, as a snapshot, with its version vector. Only the vector and
// what identifies the state are taken here, under the lock; the snapshot is
// the kept one when it is of the head, and otherwise the returned job, for
// the call to encode once it has released the lock (encodeAnswer). The
// caller holds the lock and has collected garbage with minSynced.
func (b *Backend) snapshotAnswer(ctx context.Context, ds *docState, minSynced map[string]int64) ([]byte, *snapshotJob, *api.VersionVector, error) {
	start := time.Now()
	defer func() { b.metrics.AnswerLockNanos.Add(int64(time.Since(start))) }()
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return nil, nil, nil, err
	}
	vv := doc.VersionVector()
	pb := document.VersionVectorToPB(vv)
	if data := ds.snap.cachedAnswer(ds.head, ds.collected); data != nil {
		return data, nil, pb, nil
	}
	return nil, &snapshotJob{
		ctx:         ctx,
		docID:       ds.id,
		epoch:       ds.epoch,
		seq:         ds.head,
		vv:          vv,
		minSynced:   minSynced,
		collected:   ds.collected,
		collections: slices.Clone(ds.collections),
	}, pb, nil
}
