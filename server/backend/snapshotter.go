package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// snapshotJob identifies the state a snapshot is due of: the document after
// change seq, whose version vector was vv, with the garbage that minSynced
// covers collected. Everything in it is the job's own or immutable.
type snapshotJob struct {
	ctx       context.Context
	docID     string
	epoch     int64
	seq       int64
	vv        crdt.VersionVector
	minSynced map[string]int64
}

// docSnapshots takes one document's snapshots off its lock: one at a time,
// and when more come due while one is taken, only the newest of them next.
//
// Encoding a large document takes tens of milliseconds, which every call on
// the document would wait for if it ran under the lock. The state to encode
// is not the live document, which calls keep changing, but a second one, the
// base: the state of the previous snapshot brought forward through the
// stored log, which always holds the changes first. So a crash at any point
// loses nothing, and the stored snapshot's server_seq and vector are those of
// the state encoded.
type docSnapshots struct {
	mu      sync.Mutex
	running bool
	next    *snapshotJob
	// base is the state at baseSeq the last run encoded, kept so the next
	// run applies only the changes after it; nil: start from the newest
	// stored snapshot. A run takes it out while it works.
	base    *document.Document
	baseSeq int64
	// gen counts drops of the base: a run puts its base back only if none
	// happened meanwhile.
	gen uint64
	// baseBytes is the base's heap estimate, counted by the document cache.
	baseBytes atomic.Int64
}

// dropBase forgets the kept base (the document left the cache, or was
// dropped), so it takes no memory until the next snapshot is due.
func (s *docSnapshots) dropBase() {
	s.mu.Lock()
	s.base, s.gen = nil, s.gen+1
	s.baseBytes.Store(0)
	s.mu.Unlock()
}

// submitSnapshot starts a run for job, or leaves it as the next one when a
// run is under way (replacing a job that waited: its state is older). It
// takes no time: the caller holds the document's lock.
func (b *Backend) submitSnapshot(s *docSnapshots, job snapshotJob) {
	s.mu.Lock()
	if s.running {
		if s.next != nil {
			b.metrics.SnapshotsCoalesced.Add(1)
		}
		s.next = &job
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	b.snapMu.Lock()
	if b.snapClosed {
		b.snapMu.Unlock()
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
		return
	}
	b.snapRuns.Add(1)
	b.snapMu.Unlock()
	go b.runSnapshots(s, job)
}

// runSnapshots takes job's snapshot, then the one that came due meanwhile,
// until none is left. Closing lets the last due one be taken too: there is at
// most one per document.
func (b *Backend) runSnapshots(s *docSnapshots, job snapshotJob) {
	defer b.snapRuns.Done()
	for {
		b.takeSnapshot(s, job)
		s.mu.Lock()
		next := s.next
		s.next = nil
		if next == nil {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		job = *next
	}
}

// takeSnapshot builds the job's state from the base, encodes and stores it.
// A failure is logged and counted: the log stays the truth, and the next
// interval tries again.
func (b *Backend) takeSnapshot(s *docSnapshots, job snapshotJob) {
	ctx, cancel := context.WithTimeout(job.ctx, snapshotSaveTimeout)
	defer cancel()
	s.mu.Lock()
	base, baseSeq, gen := s.base, s.baseSeq, s.gen
	s.base = nil
	s.mu.Unlock()

	snap, base, err := b.encodeJob(ctx, job, base, baseSeq)
	if err == nil {
		err = b.db.SaveSnapshot(ctx, job.docID, job.epoch, snap)
	}
	if err != nil {
		b.metrics.SnapshotFailures.Add(1)
		level := slog.LevelWarn
		if errors.Is(err, ErrDocumentBroken) {
			// The log does not rebuild the state the owner holds: a bug.
			level = slog.LevelError
		}
		b.logger.Log(ctx, level, "take snapshot", "document", job.docID, "server_seq", job.seq, "error", err)
		return
	}
	b.metrics.SnapshotsStored.Add(1)
	s.mu.Lock()
	if s.gen == gen {
		s.base, s.baseSeq = base, job.seq
		s.baseBytes.Store(int64(base.HeapEstimate()))
	}
	s.mu.Unlock()
}

// encodeJob brings base (at baseSeq; nil to read the newest stored snapshot)
// to the job's state and encodes it. It returns the document it encoded,
// the base of the next run.
func (b *Backend) encodeJob(ctx context.Context, job snapshotJob, base *document.Document, baseSeq int64) (*database.Snapshot, *document.Document, error) {
	if base == nil || baseSeq > job.seq {
		var err error
		if base, baseSeq, err = b.storedBase(ctx, job.docID, job.seq); err != nil {
			return nil, nil, err
		}
	}
	if err := b.replay(ctx, job.docID, base, baseSeq, job.seq); err != nil {
		return nil, nil, err
	}
	vv := base.VersionVector()
	if !maps.Equal(vv, job.vv) {
		// The log up to seq did not make the state the document had at seq.
		return nil, nil, fmt.Errorf("document %s: state rebuilt at %d has another version vector: %w", job.docID, job.seq, ErrDocumentBroken)
	}
	if len(job.minSynced) > 0 && base.Size().GC.Total() > 0 {
		if minSynced, err := document.VersionVectorFromPB(&api.VersionVector{Vector: job.minSynced}); err == nil {
			base.GarbageCollect(minSynced)
		}
	}
	if b.beforeEncode != nil {
		b.beforeEncode(job.docID, job.seq)
	}
	data, err := base.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("document %s: %w", job.docID, err)
	}
	return &database.Snapshot{
		ServerSeq:     job.seq,
		Lamport:       vv[crdt.InitialActorID],
		VersionVector: document.VersionVectorToPB(vv).GetVector(),
		Data:          data,
		CreatedAt:     time.Now(),
	}, base, nil
}

// storedBase reads the newest stored snapshot at or before seq (an empty
// document at 0 when there is none, or it does not read).
func (b *Backend) storedBase(ctx context.Context, docID string, seq int64) (*document.Document, int64, error) {
	snap, err := b.db.FindSnapshot(ctx, docID, seq)
	switch {
	case err == nil:
		doc, derr := snapshotDoc(snap)
		if derr == nil {
			return doc, snap.ServerSeq, nil
		}
		b.logger.Error("stored snapshot does not read; rebuilding from the log",
			"document", docID, "server_seq", snap.ServerSeq, "error", derr)
	case !errors.Is(err, database.ErrSnapshotNotFound):
		return nil, 0, fmt.Errorf("document %s: find snapshot: %w", docID, err)
	}
	return document.New(), 0, nil
}

// waitSnapshots waits for the snapshot runs under way, refusing new ones.
func (b *Backend) waitSnapshots(ctx context.Context) error {
	b.snapMu.Lock()
	b.snapClosed = true
	b.snapMu.Unlock()
	done := make(chan struct{})
	go func() {
		b.snapRuns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for snapshots: %w", ctx.Err())
	}
}
