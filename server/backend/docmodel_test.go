package backend_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// writer plays one SDK client editing the root object: each change sets a
// key, with the client's lamport clock and a vector of what it has seen.
type writer struct {
	tb      testing.TB
	b       *backend.Backend
	id      string
	actor   []byte
	docID   string
	seq     uint32
	lamport int64
	server  int64
	seen    map[string]int64
	// project is the project the writer's calls act in.
	project *database.ProjectInfo
}

func newWriter(tb testing.TB, b *backend.Backend, key string) *writer {
	tb.Helper()
	return newWriterIn(defaultProject, tb, b, key)
}

// newWriterIn returns a writer whose calls act in project p.
func newWriterIn(p *database.ProjectInfo, tb testing.TB, b *backend.Backend, key string) *writer {
	tb.Helper()
	id := activateIn(p, tb, b, key)
	actor, err := hex.DecodeString(id)
	if err != nil {
		tb.Fatal(err)
	}
	return &writer{tb: tb, b: b, id: id, actor: actor, seen: map[string]int64{}, project: p}
}

func (w *writer) ticket(lamport int64) *api.TimeTicket {
	return &api.TimeTicket{Lamport: lamport, ActorId: w.actor}
}

func rootTicket() *api.TimeTicket { return sdksim.RootTicket() }

// change builds the next change with the operations ops makes from its
// ticket.
func (w *writer) change(ops func(at *api.TimeTicket) []*api.Operation) *api.Change {
	w.seq++
	w.lamport++
	vv := map[string]int64{}
	for k, v := range w.seen {
		vv[k] = v
	}
	vv[actorB64(w.actor)] = w.lamport
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq: w.seq, Lamport: w.lamport, ActorId: w.actor,
			VersionVector: &api.VersionVector{Vector: vv},
		},
		Operations: ops(w.ticket(w.lamport)),
	}
}

// set is a change setting key to a string value on the root.
func (w *writer) set(key, value string) *api.Change {
	return w.change(func(at *api.TimeTicket) []*api.Operation {
		return []*api.Operation{setOp(rootTicket(), key, value, at)}
	})
}

func setOp(parent *api.TimeTicket, key, value string, at *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: parent,
		Key:             key,
		Value:           &api.JSONElementSimple{CreatedAt: at, Type: api.ValueType_VALUE_TYPE_STRING, Value: []byte(value)},
		ExecutedAt:      at,
	}}}
}

func actorB64(actor []byte) string { return sdksim.VectorKey(actor) }

// vector is the vector the client reports: what it has seen and its own
// clock.
func (w *writer) vector() *api.VersionVector {
	vv := map[string]int64{}
	for k, v := range w.seen {
		vv[k] = v
	}
	if w.lamport > 0 {
		vv[actorB64(w.actor)] = w.lamport
	}
	return &api.VersionVector{Vector: vv}
}

// absorb follows an answer as the SDK would: the checkpoint, and the
// clocks of what it pulled (from a snapshot's vector or the changes').
func (w *writer) absorb(resp *api.ChangePack) {
	w.server = max(w.server, resp.GetCheckpoint().GetServerSeq())
	if resp.GetSnapshot() != nil {
		for k, v := range resp.GetVersionVector().GetVector() {
			w.seen[k] = max(w.seen[k], v)
			w.lamport = max(w.lamport, v)
		}
	}
	for _, c := range resp.GetChanges() {
		w.lamport = max(w.lamport, c.GetId().GetLamport())
		for k, v := range c.GetId().GetVersionVector().GetVector() {
			w.seen[k] = max(w.seen[k], v)
		}
	}
}

func (w *writer) attach(key string) *api.ChangePack {
	w.tb.Helper()
	docID, resp, err := w.b.AttachDocument(context.Background(), w.project, 0, w.id, key, pack(0, 0))
	if err != nil {
		w.tb.Fatal(err)
	}
	w.docID = docID
	w.absorb(resp)
	return resp
}

// push sends changes (made with set or change) in one PushPull.
func (w *writer) push(changes ...*api.Change) (*api.ChangePack, error) {
	p := &api.ChangePack{
		DocumentKey:   "doc",
		Checkpoint:    &api.Checkpoint{ServerSeq: w.server, ClientSeq: w.seq},
		Changes:       changes,
		VersionVector: w.vector(),
	}
	resp, err := w.b.PushPull(context.Background(), w.project, 0, w.id, w.docID, p, false)
	if err == nil {
		w.absorb(resp)
	}
	return resp, err
}

func (w *writer) mustPush(changes ...*api.Change) *api.ChangePack {
	w.tb.Helper()
	resp, err := w.push(changes...)
	if err != nil {
		w.tb.Fatal(err)
	}
	return resp
}

// replay builds, from scratch, the document that the stored log up to upTo
// makes.
func replay(tb testing.TB, db database.Database, docID string, upTo int64) *document.Document {
	tb.Helper()
	doc := document.New()
	var bodies []*api.Change
	for _, c := range storedLog(tb, db, docID) {
		if c.ServerSeq <= upTo {
			bodies = append(bodies, c.Body)
		}
	}
	if err := doc.ApplyChanges(bodies); err != nil {
		tb.Fatalf("stored log does not apply: %v", err)
	}
	return doc
}

// replayJSON is the document the log makes, built from scratch.
func replayJSON(tb testing.TB, db database.Database, docID string, upTo int64) string {
	tb.Helper()
	doc := replay(tb, db, docID, upTo)
	return doc.JSON()
}

func snapshotJSON(tb testing.TB, data []byte) string {
	tb.Helper()
	doc, err := document.FromSnapshot(data)
	if err != nil {
		tb.Fatalf("snapshot does not read: %v", err)
	}
	return doc.JSON()
}

// TestChangeThatDoesNotApplyIsRefused: a pack whose change has an empty
// operation, names an unknown parent or removes the root is refused with the
// sentinel naming the problem; nothing of it is stored, not even the good
// change before it, and the document goes on serving every client.
func TestChangeThatDoesNotApplyIsRefused(t *testing.T) {
	bad := map[string]struct {
		ops  func(at *api.TimeTicket) []*api.Operation
		want error
	}{
		"empty operation": {func(*api.TimeTicket) []*api.Operation { return []*api.Operation{{}} }, document.ErrInvalidOperation},
		"unknown parent": {func(at *api.TimeTicket) []*api.Operation {
			return []*api.Operation{setOp(&api.TimeTicket{Lamport: 99, ActorId: at.ActorId}, "k", "v", at)}
		}, document.ErrElementNotFound},
		"root removal": {func(at *api.TimeTicket) []*api.Operation {
			return []*api.Operation{{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
				ParentCreatedAt: rootTicket(), CreatedAt: rootTicket(), ExecutedAt: at,
			}}}}
		}, document.ErrRemoveRoot},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			b, db := newBackend(t, nil)
			a, c := newWriter(t, b, "a"), newWriter(t, b, "c")
			a.attach("doc")
			c.attach("doc")
			a.mustPush(a.set("first", "1"))

			good, poison := a.set("second", "2"), a.change(tc.ops)
			_, err := a.push(good, poison)
			if !errors.Is(err, backend.ErrInvalidChange) || !errors.Is(err, tc.want) {
				t.Fatalf("push = %v; want ErrInvalidChange and %v", err, tc.want)
			}
			if n := len(storedLog(t, db, a.docID)); n != 1 {
				t.Fatalf("log holds %d changes after the refusal, want 1", n)
			}

			// The others go on: c pulls and edits, a fresh client attaches.
			c.mustPush(c.set("third", "3"))
			late := newWriter(t, b, "late")
			late.attach("doc")
			late.mustPush(late.set("fourth", "4"))
			want := `{"first":"1","fourth":"4","third":"3"}`
			if got := replayJSON(t, db, a.docID, 1<<62); got != want {
				t.Fatalf("document %s, want %s", got, want)
			}
		})
	}
}

// TestLateJoinerGetsTheDocumentAsASnapshot: a client at least the threshold
// behind gets the document as it is at the head, with the document's own
// vector (the initial actor included) and no changes, and edits on from
// there; one closer than the threshold gets changes.
func TestLateJoinerGetsTheDocumentAsASnapshot(t *testing.T) {
	b, db := configuredBackend(t, backend.Config{SnapshotThreshold: 20, SnapshotInterval: 7})
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 30 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i%4), fmt.Sprint(i)))
	}
	late := newWriter(t, b, "late")
	resp := late.attach("doc")
	if resp.GetSnapshot() == nil || len(resp.GetChanges()) != 0 {
		t.Fatalf("late attach got %d changes and snapshot %v; want a snapshot only", len(resp.GetChanges()), resp.GetSnapshot() != nil)
	}
	if got := resp.GetCheckpoint().GetServerSeq(); got != 30 {
		t.Fatalf("snapshot checkpoint server_seq %d, want the head 30", got)
	}
	vv := resp.GetVersionVector().GetVector()
	if vv["AAAAAAAAAAAAAAAA"] == 0 || vv[actorB64(a.actor)] != 30 {
		t.Fatalf("snapshot vector %v; want the document's, with the initial actor and a at 30", vv)
	}
	if got, want := snapshotJSON(t, resp.GetSnapshot()), replayJSON(t, db, a.docID, 30); got != want {
		t.Fatalf("snapshot %s, log %s", got, want)
	}
	late.mustPush(late.set("late", "x"))
	resp = a.mustPush()
	if resp.GetSnapshot() != nil || len(resp.GetChanges()) != 1 {
		t.Fatalf("a one change behind got %d changes, snapshot %v", len(resp.GetChanges()), resp.GetSnapshot() != nil)
	}
	// A client's own new changes do not count as being behind.
	burst := make([]*api.Change, 25)
	for i := range burst {
		burst[i] = late.set("burst", fmt.Sprint(i))
	}
	if resp := late.mustPush(burst...); resp.GetSnapshot() != nil {
		t.Fatal("a push of 25 changes was answered with a snapshot")
	}
	if got := b.Metrics().SnapshotsSent.Load(); got != 1 {
		t.Fatalf("%d snapshots sent, want 1", got)
	}
}

// TestOversizedPushIsRefused: a push past the size limit is accepted, as
// upstream does (the SDK refuses its own edits past it, and concurrent ones
// may pass it together); one past the hard bound, a multiple of the limit,
// is refused and nothing of it stored; smaller edits go on.
func TestOversizedPushIsRefused(t *testing.T) {
	limited, db := configuredBackend(t, backend.Config{MaxSizePerDocument: 1000, SizeHardLimitFactor: 2})
	if got := limited.MaxSizePerDocument(); got != 1000 {
		t.Fatalf("MaxSizePerDocument = %d", got)
	}
	a := newWriter(t, limited, "a")
	a.attach("doc")
	a.mustPush(a.set("small", "x"))
	a.mustPush(a.set("past", strings.Repeat("p", 350)))
	_, err := a.push(a.set("big", strings.Repeat("y", 1000)))
	if !errors.Is(err, backend.ErrDocumentSizeExceedsLimit) {
		t.Fatalf("push = %v, want ErrDocumentSizeExceedsLimit", err)
	}
	if n := len(storedLog(t, db, a.docID)); n != 2 {
		t.Fatalf("log holds %d changes, want 2", n)
	}
	// The SDK keeps the refused change and sends it again: replace it
	// with a smaller one, as a client that undid it would.
	a.seq--
	a.mustPush(a.set("other", "z"))
	if got := replayJSON(t, db, a.docID, 1<<62); got != `{"other":"z","past":"`+strings.Repeat("p", 350)+`","small":"x"}` {
		t.Fatalf("document %s", got)
	}
}

// dbCase is a database kind the snapshot tests run on.
type dbCase struct {
	name string
	open func(t *testing.T) database.Database
}

func databases() []dbCase {
	return []dbCase{
		{"memory", func(*testing.T) database.Database { return memory.New() }},
		{"mongo", func(t *testing.T) database.Database {
			m := testenv.MongoURI(t)
			return dbtest.DialMongo(t, m, m.NewDatabase())
		}},
	}
}

// TestSnapshotsAreStoredEveryInterval: with interval 10, 35 changes leave a
// stored snapshot at 30 holding what the log holds up to 30, and a node
// starting over on the same database (a restart, or another node taking the
// document over) serves the same document from it and the log after it.
func TestSnapshotsAreStoredEveryInterval(t *testing.T) {
	for _, dc := range databases() {
		t.Run(dc.name, func(t *testing.T) {
			ctx := context.Background()
			db := dc.open(t)
			cfg := backend.Config{DB: db, SnapshotInterval: 10, SnapshotThreshold: 5}
			b, err := backend.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			a := newWriter(t, b, "a")
			a.attach("doc")
			for i := range 35 {
				a.mustPush(a.set(fmt.Sprintf("k%d", i%6), fmt.Sprint(i)))
			}
			// Close waits for the snapshots being taken. One due while the
			// previous is still taken is passed over for the next.
			if err := b.Close(ctx); err != nil {
				t.Fatal(err)
			}
			m := b.Metrics()
			if stored, skipped := m.SnapshotsStored.Load(), m.SnapshotsCoalesced.Load(); stored+skipped != 3 || m.SnapshotFailures.Load() != 0 {
				t.Fatalf("%d snapshots stored, %d passed over, %d failed; want 3 due (at 10, 20, 30), none failed", stored, skipped, m.SnapshotFailures.Load())
			}
			snap, err := db.FindSnapshot(ctx, a.docID, 1<<62)
			if err != nil {
				t.Fatal(err)
			}
			if snap.ServerSeq != 30 {
				t.Fatalf("newest snapshot at %d, want 30", snap.ServerSeq)
			}
			if got, want := snapshotJSON(t, snap.Data), replayJSON(t, db, a.docID, 30); got != want {
				t.Fatalf("snapshot %s, log up to 30 %s", got, want)
			}

			// Another node over the same database.
			b2, err := backend.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			late := newWriter(t, b2, "late")
			resp := late.attach("doc")
			if got, want := snapshotJSON(t, resp.GetSnapshot()), replayJSON(t, db, a.docID, 35); got != want {
				t.Fatalf("rebuilt document %s, log %s", got, want)
			}
			if got := b2.Metrics().DocumentsBuilt.Load(); got != 1 {
				t.Fatalf("documents built %d, want 1", got)
			}
		})
	}
}

// TestTombstonesAreCollectedOnceEveryoneSawTheRemoval: a removed key stays
// in the server's document until every attached client reported a vector
// covering the removal, and is gone from the snapshot after that.
func TestTombstonesAreCollectedOnceEveryoneSawTheRemoval(t *testing.T) {
	b, _ := configuredBackend(t, backend.Config{SnapshotThreshold: 1})
	a, c := newWriter(t, b, "a"), newWriter(t, b, "c")
	a.attach("doc")
	c.attach("doc")
	add := a.set("gone", "x")
	a.mustPush(add)
	created := add.GetId().GetLamport()
	a.mustPush(a.change(func(at *api.TimeTicket) []*api.Operation {
		return []*api.Operation{{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
			ParentCreatedAt: rootTicket(), CreatedAt: a.ticket(created), ExecutedAt: at,
		}}}}
	}))
	garbage := func(w *writer) int {
		t.Helper()
		// A fresh observer far behind is sent the server's document.
		o := newWriter(t, b, fmt.Sprintf("o%d", b.Metrics().SnapshotsSent.Load()))
		resp := o.attach("doc")
		doc, err := document.FromSnapshot(resp.GetSnapshot())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.DetachDocument(context.Background(), defaultProject, 0, o.id, o.docID, pack(resp.GetCheckpoint().GetServerSeq(), 0)); err != nil {
			t.Fatal(err)
		}
		return doc.GarbageLen()
	}
	if n := garbage(a); n != 1 {
		t.Fatalf("garbage %d before c saw the removal, want 1", n)
	}
	c.mustPush() // pulls the removal
	c.mustPush() // reports a vector covering it
	a.mustPush()
	if n := garbage(a); n != 0 {
		t.Fatalf("garbage %d after every client saw the removal, want 0", n)
	}
	if b.Metrics().GarbageCollected.Load() == 0 {
		t.Fatal("no tombstone collected")
	}
}

// BenchmarkHotDocumentMemory reports the heap a document held built in
// memory costs, per document, for documents of 100 keys set by one client:
// the log itself lives in the database (here the memory one, so it is
// measured apart, as log-bytes/doc, by the same documents before they were
// built). Each op builds and keeps one document.
func BenchmarkHotDocumentMemory(b *testing.B) {
	const keys = 100
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	bk, db := configuredBackend(b, backend.Config{})
	ws := make([]*writer, b.N)
	start := heap()
	for i := range ws {
		w := newWriter(b, bk, fmt.Sprintf("w%d", i))
		w.attach(fmt.Sprintf("doc-%d", i))
		changes := make([]*api.Change, keys)
		for k := range changes {
			changes[k] = w.set(fmt.Sprintf("key-%d", k), "value")
		}
		w.mustPush(changes...)
		ws[i] = w
	}
	withDocs := heap()
	// Dropping the built documents (a node restart would) leaves the logs.
	bk2, err := backend.New(backend.Config{DB: db, DocumentCacheBytes: 1})
	if err != nil {
		b.Fatal(err)
	}
	_ = bk.Close(context.Background())
	bk = nil
	for _, w := range ws {
		w.b = nil
	}
	withoutDocs := heap()
	runtime.KeepAlive(ws)
	runtime.KeepAlive(bk2)
	b.ReportMetric(float64(withDocs-min(withoutDocs, withDocs))/float64(b.N), "doc-bytes/doc")
	b.ReportMetric(float64(min(withoutDocs, withDocs)-min(start, withoutDocs))/float64(b.N), "log-bytes/doc")
}

// TestEvictedDocumentsAreRebuilt: with a cache too small for two documents,
// each call on one evicts the other, which the next call rebuilds from the
// database, and both end as their logs make them.
func TestEvictedDocumentsAreRebuilt(t *testing.T) {
	b, db := configuredBackend(t, backend.Config{DocumentCacheBytes: 1, SnapshotInterval: 4, SnapshotThreshold: 1})
	x, y := newWriter(t, b, "x"), newWriter(t, b, "y")
	x.attach("doc-x")
	y.attach("doc-y")
	for i := range 10 {
		x.mustPush(x.set("k", fmt.Sprint(i)))
		y.mustPush(y.set(fmt.Sprintf("k%d", i), "v"))
	}
	if got := b.Metrics().DocumentsBuilt.Load(); got < 10 {
		t.Fatalf("%d documents built, want one per eviction", got)
	}
	for _, w := range []*writer{x, y} {
		late := newWriter(t, b, "late-"+w.id)
		_, resp, err := b.AttachDocument(context.Background(), defaultProject, 0, late.id, map[*writer]string{x: "doc-x", y: "doc-y"}[w], pack(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := snapshotJSON(t, resp.GetSnapshot()), replayJSON(t, db, w.docID, 1<<62); got != want {
			t.Fatalf("served document %s, the log makes %s", got, want)
		}
	}
}

// TestPushPullDoesNotWaitForASnapshot: while a snapshot of the document is
// being encoded (held there), its clients' PushPulls complete, and the
// snapshot stored afterwards is the state after its change, with its vector.
func TestPushPullDoesNotWaitForASnapshot(t *testing.T) {
	ctx := context.Background()
	b, db := configuredBackend(t, backend.Config{SnapshotInterval: 10, SnapshotThreshold: -1})
	entered, resume := holdHook(b, backend.SetBeforeEncode, 4)
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 10 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	if seq := <-entered; seq != 10 {
		t.Fatalf("snapshot of %d being encoded, want 10", seq)
	}
	// Held in the encoder: the document takes more changes meanwhile, more
	// than an interval of them, and the snapshot due at 20 waits its turn.
	for i := range 15 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), "later"))
	}
	if got := storedLog(t, db, a.docID); len(got) != 25 {
		t.Fatalf("%d changes stored while the snapshot was held, want 25", len(got))
	}
	close(resume)
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.Metrics().SnapshotsStored.Load(); got != 2 {
		t.Fatalf("%d snapshots stored, want 2 (at 10, then 20)", got)
	}
	for _, seq := range []int64{10, 20} {
		snap, err := db.FindSnapshot(ctx, a.docID, seq)
		if err != nil {
			t.Fatal(err)
		}
		if snap.ServerSeq != seq {
			t.Fatalf("snapshot at or before %d is at %d", seq, snap.ServerSeq)
		}
		if got, want := snapshotJSON(t, snap.Data), replayJSON(t, db, a.docID, seq); got != want {
			t.Fatalf("snapshot at %d holds %s, the log up to it %s", seq, got, want)
		}
		want := replayVector(t, db, a.docID, seq)
		if !maps.Equal(snap.VersionVector, want) {
			t.Fatalf("snapshot at %d has vector %v, the log up to it makes %v", seq, snap.VersionVector, want)
		}
	}
}

// TestCrashWhileEncodingLosesNothing: a node that stops for good while it
// encodes a snapshot leaves every acknowledged change to the node that takes
// the document over, which serves the same document.
func TestCrashWhileEncodingLosesNothing(t *testing.T) {
	db := memory.New()
	cfg := backend.Config{DB: db, SnapshotInterval: 10, SnapshotThreshold: 5}
	b, err := backend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	entered, never := holdHook(b, backend.SetBeforeEncode, 1)
	t.Cleanup(func() { close(never) })
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 13 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i%4), fmt.Sprint(i)))
	}
	<-entered
	if _, err := db.FindSnapshot(context.Background(), a.docID, 1<<62); !errors.Is(err, database.ErrSnapshotNotFound) {
		t.Fatalf("a snapshot is stored while its encoding is held: %v", err)
	}

	b2, err := backend.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b2.Close(context.Background()) })
	late := newWriter(t, b2, "late")
	resp := late.attach("doc")
	if got, want := snapshotJSON(t, resp.GetSnapshot()), replayJSON(t, db, a.docID, 13); got != want {
		t.Fatalf("new owner serves %s, the log holds %s", got, want)
	}
	if !strings.Contains(snapshotJSON(t, resp.GetSnapshot()), `"k0":"12"`) {
		t.Fatalf("the last change is missing: %s", snapshotJSON(t, resp.GetSnapshot()))
	}
}

// replayVector is the version vector the log up to upTo makes, in wire form.
func replayVector(tb testing.TB, db database.Database, docID string, upTo int64) map[string]int64 {
	tb.Helper()
	doc := replay(tb, db, docID, upTo)
	return document.VersionVectorToPB(doc.VersionVector()).GetVector()
}

// TestCacheCountsTheHeap: the cache's figure for a built document is its
// heap estimate (followed between walks in proportion to its size), several
// times the SDK's byte count of it.
func TestCacheCountsTheHeap(t *testing.T) {
	b, db := configuredBackend(t, backend.Config{SnapshotInterval: -1, SnapshotThreshold: -1})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 300 {
		a.mustPush(a.set(fmt.Sprintf("key %d", i), "some value"))
	}
	doc := document.New()
	var bodies []*api.Change
	for _, c := range storedLog(t, db, a.docID) {
		bodies = append(bodies, c.Body)
	}
	if err := doc.ApplyChanges(bodies); err != nil {
		t.Fatal(err)
	}
	got, est := float64(b.Metrics().CachedDocumentBytes.Load()), float64(doc.HeapEstimate())
	if got < est/1.25 || got > est*1.25 {
		t.Fatalf("cache counts %.0f bytes, the document's heap estimate is %.0f", got, est)
	}
	if sdk := float64(doc.Size().Total()); got < 2*sdk {
		t.Fatalf("cache counts %.0f bytes, hardly more than the SDK's %.0f", got, sdk)
	}
}

// TestStoredSnapshotCarriesOnlyUnsyncedTombstones: a snapshot taken off the
// lock collects the garbage every attached client has seen, as the owner's
// own copy does: of the 19 values overwritten, only the one the other client
// has not seen yet stays in the snapshot at 20.
func TestStoredSnapshotCarriesOnlyUnsyncedTombstones(t *testing.T) {
	ctx := context.Background()
	b, db := configuredBackend(t, backend.Config{SnapshotInterval: 20, SnapshotThreshold: -1})
	a, c := newWriter(t, b, "a"), newWriter(t, b, "c")
	a.attach("doc")
	c.attach("doc")
	for i := range 19 {
		a.mustPush(a.set("k", fmt.Sprint(i)))
	}
	c.mustPush() // pulls the 19 changes
	c.mustPush() // reports a vector covering them
	a.mustPush(a.set("k", "19"))
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := db.FindSnapshot(ctx, a.docID, 20)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := document.FromSnapshot(snap.Data)
	if err != nil {
		t.Fatal(err)
	}
	if snap.ServerSeq != 20 || doc.GarbageLen() != 1 {
		t.Fatalf("snapshot at %d holds %d tombstones, want 1 at 20", snap.ServerSeq, doc.GarbageLen())
	}
	if got := doc.JSON(); got != `{"k":"19"}` {
		t.Fatalf("snapshot holds %s", got)
	}
}
