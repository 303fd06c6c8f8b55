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
	ctx context.Context
	// project is the document's project, whose settings a snapshot run
	// follows (auto revisions); nil for an answer's encoding.
	project   *database.ProjectInfo
	docID     string
	epoch     int64
	seq       int64
	vv        crdt.VersionVector
	minSynced map[string]int64
	// collected is the document's count of collections when the job was
	// noted: an answer kept at seq is reused only while no collection ran
	// since, so that a late joiner is not sent garbage already collected.
	collected uint64
	// collections are the live document's recent collections, oldest
	// first: the rebuilt state collects at the same points, so that it
	// holds no more garbage than the live one.
	collections []collection
}

// collection is one garbage collection of the live document: after change
// seq, of the tombstones vv covered.
type collection struct {
	seq int64
	vv  map[string]int64
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
	// done is closed when the run under way ends.
	done chan struct{}
	next *snapshotJob
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

	// answer is the encoded state at answerSeq after answerCollected
	// collections, shared by the late joiners answered with it. answerBytes
	// is its size, counted by the cache.
	answer          []byte
	answerSeq       int64
	answerCollected uint64
	answerBytes     atomic.Int64
	// encoding (a one-slot channel, so waiting honours a context)
	// serialises the encoding of answers, outside the document's lock, so
	// late joiners of one head wait for one encoding, not one each.
	encoding chan struct{}
}

func newDocSnapshots() *docSnapshots {
	return &docSnapshots{encoding: make(chan struct{}, 1)}
}

// dropBase forgets the kept base and answer (the document left the cache,
// or was dropped), so they take no memory until used again.
func (s *docSnapshots) dropBase() {
	s.mu.Lock()
	s.base, s.gen = nil, s.gen+1
	s.answer = nil
	s.baseBytes.Store(0)
	s.answerBytes.Store(0)
	s.mu.Unlock()
}

// cachedAnswer returns the answer encoded at seq after collected
// collections, if it is the one kept.
func (s *docSnapshots) cachedAnswer(seq int64, collected uint64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answer != nil && s.answerSeq == seq && s.answerCollected == collected {
		return s.answer
	}
	return nil
}

// keepAnswerLocked keeps data as the answer at seq after collected
// collections. The caller holds s.mu.
func (s *docSnapshots) keepAnswerLocked(seq int64, collected uint64, data []byte) {
	s.answer, s.answerSeq, s.answerCollected = data, seq, collected
	s.answerBytes.Store(int64(len(data)))
}

// encodeAnswer returns the encoded state of job's document after change
// job.seq, for an answer to a client far behind. It runs after the call
// released the document's lock: the state encoded is not the live document
// but the kept base (or the newest stored snapshot) brought forward through
// the log, which holds every change up to job.seq. Late joiners of one head
// share one encoding.
func (b *Backend) encodeAnswer(ctx context.Context, s *docSnapshots, job snapshotJob) ([]byte, error) {
	select {
	case s.encoding <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("document %s: wait for an answer's encoding: %w", job.docID, ctx.Err())
	}
	defer func() { <-s.encoding }()
	if data := s.cachedAnswer(job.seq, job.collected); data != nil {
		return data, nil
	}
	start := time.Now()
	s.mu.Lock()
	base, baseSeq, gen := s.base, s.baseSeq, s.gen
	s.base = nil
	s.mu.Unlock()
	data, base, err := b.encodeState(ctx, job, base, baseSeq, b.beforeAnswer)
	if err != nil {
		return nil, err
	}
	observeSince(b.metrics.AnswerSnapshotSeconds, start)
	s.mu.Lock()
	if s.gen == gen {
		// A snapshot run may have put a base back meanwhile: keep the newer.
		if s.base == nil || s.baseSeq < job.seq {
			s.base, s.baseSeq = base, job.seq
			s.baseBytes.Store(int64(base.HeapEstimate()))
		}
		s.keepAnswerLocked(job.seq, job.collected, data)
	}
	s.mu.Unlock()
	return data, nil
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
	s.done = make(chan struct{})
	s.mu.Unlock()
	b.snapMu.Lock()
	if b.snapClosed {
		b.snapMu.Unlock()
		s.mu.Lock()
		s.running = false
		close(s.done)
		s.mu.Unlock()
		return
	}
	b.snapRuns.Add(1)
	b.snapMu.Unlock()
	if g := b.metrics.SnapshotRuns; g != nil {
		g.Inc()
	}
	go b.runSnapshots(s, job)
}

// runSnapshots takes job's snapshot, then the one that came due meanwhile,
// until none is left. Closing lets the last due one be taken too: there is at
// most one per document.
func (b *Backend) runSnapshots(s *docSnapshots, job snapshotJob) {
	defer b.snapRuns.Done()
	if g := b.metrics.SnapshotRuns; g != nil {
		defer g.Dec()
	}
	for {
		b.takeSnapshot(s, job)
		s.mu.Lock()
		next := s.next
		s.next = nil
		if next == nil {
			s.running = false
			close(s.done)
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
	b.autoRevision(ctx, job, base)
	s.mu.Lock()
	if s.gen == gen {
		s.base, s.baseSeq = base, job.seq
		s.baseBytes.Store(int64(base.HeapEstimate()))
	}
	s.mu.Unlock()
}

// encodeJob brings base (at baseSeq; nil to read the newest stored snapshot)
// to the job's state and encodes it as a snapshot to store. It returns the
// document it encoded, the base of the next run.
func (b *Backend) encodeJob(ctx context.Context, job snapshotJob, base *document.Document, baseSeq int64) (*database.Snapshot, *document.Document, error) {
	data, base, err := b.encodeState(ctx, job, base, baseSeq, b.beforeEncode)
	if err != nil {
		return nil, nil, err
	}
	vv := job.vv
	return &database.Snapshot{
		ServerSeq:     job.seq,
		Lamport:       vv[crdt.InitialActorID],
		VersionVector: document.VersionVectorToPB(vv).GetVector(),
		Data:          data,
		CreatedAt:     time.Now(),
	}, base, nil
}

// encodeState brings base (at baseSeq; nil to read the newest stored
// snapshot) to the job's state, collecting garbage on the way where the
// live document did (job.collections), checks it is the state the owner
// held, collects the garbage job.minSynced covers, and encodes it. It returns the
// document it encoded. hook, when a test set one, runs just before encoding.
func (b *Backend) encodeState(ctx context.Context, job snapshotJob, base *document.Document, baseSeq int64, hook func(docID string, seq int64)) ([]byte, *document.Document, error) {
	if base == nil || baseSeq > job.seq {
		var err error
		if base, baseSeq, err = b.storedBase(ctx, job.docID, job.seq); err != nil {
			return nil, nil, err
		}
	}
	at := baseSeq
	for _, c := range job.collections {
		// One before the base's state cannot be placed: the base keeps
		// the garbage it missed, which a later collection takes.
		if c.seq < at || c.seq > job.seq {
			continue
		}
		if err := b.replay(ctx, job.docID, base, at, c.seq); err != nil {
			return nil, nil, err
		}
		at = c.seq
		collectWith(base, c.vv)
	}
	if err := b.replay(ctx, job.docID, base, at, job.seq); err != nil {
		return nil, nil, err
	}
	vv := base.VersionVector()
	if !maps.Equal(vv, job.vv) {
		// The log up to seq did not make the state the document had at seq.
		return nil, nil, fmt.Errorf("document %s: state rebuilt at %d has another version vector: %w", job.docID, job.seq, ErrDocumentBroken)
	}
	collectWith(base, job.minSynced)
	if hook != nil {
		hook(job.docID, job.seq)
	}
	data, err := base.Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("document %s: %w", job.docID, err)
	}
	return data, base, nil
}

// collectWith purges doc's tombstones that the wire vector vv covers.
func collectWith(doc *document.Document, vv map[string]int64) {
	if len(vv) == 0 || doc.Size().GC.Total() == 0 {
		return
	}
	if v, err := document.VersionVectorFromPB(&api.VersionVector{Vector: vv}); err == nil {
		doc.GarbageCollect(v)
	}
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
