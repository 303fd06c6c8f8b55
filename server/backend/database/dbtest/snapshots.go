package dbtest

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testSnapshots checks saving and finding snapshots on one handle; the
// racing part runs on two handles of one database in RunSnapshotsShared.
func testSnapshots(t *testing.T, newDB NewDB) {
	t.Run("RoundTrip", func(t *testing.T) { testSnapshotRoundTrip(t, newDB(t)) })
	t.Run("AtOrBefore", func(t *testing.T) { testSnapshotAtOrBefore(t, newDB(t)) })
	t.Run("Fencing", func(t *testing.T) { testSnapshotFencing(t, newDB(t)) })
	t.Run("Large", func(t *testing.T) { testSnapshotLarge(t, newDB(t)) })
	t.Run("Contexts", func(t *testing.T) { testSnapshotContexts(t, newDB(t)) })
	RunSnapshotsShared(t, func(t *testing.T) (database.Database, database.Database) {
		db := newDB(t)
		return db, db
	})
}

// RunSnapshotsShared runs the snapshot cases where two handles on one
// database act as two nodes saving and reading at once.
func RunSnapshotsShared(t *testing.T, newPair NewPair) {
	t.Run("Shared/ConcurrentSaves", func(t *testing.T) { testSnapshotConcurrentSaves(t, newPair) })
}

// docWithLog creates a document whose log holds n changes.
func docWithLog(t *testing.T, ctx context.Context, db database.Database, n int) *database.DocInfo {
	t.Helper()
	d := newDoc(t, ctx, db)
	actor := unknownID()
	for first := 1; first <= n; first += 500 {
		size := min(500, n-first+1)
		if err := db.AppendChanges(ctx, d.ID, 0, batch(actor, int64(first), uint32(first), size, "snap")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// snapshotAt builds a snapshot of the given server_seq whose data and
// version vector name it and the tag.
func snapshotAt(seq int64, tag string) *database.Snapshot {
	return &database.Snapshot{
		ServerSeq:     seq,
		Lamport:       seq*3 + 1,
		VersionVector: map[string]int64{"AAAAAAAAAAAAAAAA": seq, "b+/=": seq + 1, tag: 2},
		Data:          []byte(fmt.Sprintf("snapshot %d %s %s", seq, tag, strings.Repeat("ü", int(max(seq, 0)%50)))),
	}
}

// assertSnapshot fails unless got has want's content. CreatedAt is only
// required to be set.
func assertSnapshot(t *testing.T, got, want *database.Snapshot) {
	t.Helper()
	if got == nil {
		t.Fatalf("got no snapshot, want the one at %d", want.ServerSeq)
	}
	if got.ServerSeq != want.ServerSeq || got.Lamport != want.Lamport {
		t.Fatalf("snapshot at %d with lamport %d, want %d and %d", got.ServerSeq, got.Lamport, want.ServerSeq, want.Lamport)
	}
	if len(got.VersionVector) != len(want.VersionVector) || !maps.Equal(got.VersionVector, want.VersionVector) {
		t.Fatalf("snapshot at %d: version vector %v, want %v", got.ServerSeq, got.VersionVector, want.VersionVector)
	}
	if !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("snapshot at %d: %d bytes of data differ from the %d saved", got.ServerSeq, len(got.Data), len(want.Data))
	}
	if got.CreatedAt.IsZero() {
		t.Fatalf("snapshot at %d has no CreatedAt", got.ServerSeq)
	}
}

func wantNoSnapshot(t *testing.T, db database.Database, ctx context.Context, docID string, atOrBefore int64) {
	t.Helper()
	s, err := db.FindSnapshot(ctx, docID, atOrBefore)
	if !errors.Is(err, database.ErrSnapshotNotFound) {
		if err == nil {
			t.Fatalf("FindSnapshot(%d) found the snapshot at %d, want ErrSnapshotNotFound", atOrBefore, s.ServerSeq)
		}
		t.Fatalf("FindSnapshot(%d): got %v, want ErrSnapshotNotFound", atOrBefore, err)
	}
}

func testSnapshotRoundTrip(t *testing.T, db database.Database) {
	ctx := testCtx(t)
	d := docWithLog(t, ctx, db, 5)
	wantNoSnapshot(t, db, ctx, d.ID, 5)

	saved := snapshotAt(3, "first")
	if err := db.SaveSnapshot(ctx, d.ID, 0, saved); err != nil {
		t.Fatal(err)
	}
	want := snapshotAt(3, "first")
	// The database keeps its own copy.
	saved.Data[0] ^= 0xff
	saved.VersionVector["AAAAAAAAAAAAAAAA"] = -1

	for _, at := range []int64{3, 5, 1 << 40} {
		assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, at)).get(t), want)
	}
	wantNoSnapshot(t, db, ctx, d.ID, 2)
	wantNoSnapshot(t, db, ctx, d.ID, 0)
	wantNoSnapshot(t, db, ctx, d.ID, -1)

	// A result is the caller's.
	got := must(db.FindSnapshot(ctx, d.ID, 3)).get(t)
	got.Data[0] ^= 0xff
	got.VersionVector["AAAAAAAAAAAAAAAA"] = -1
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 3)).get(t), want)

	// The first snapshot of a server_seq stays.
	if err := db.SaveSnapshot(ctx, d.ID, 0, snapshotAt(3, "second")); err != nil {
		t.Fatalf("saving at a server_seq that has a snapshot: %v", err)
	}
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 3)).get(t), want)

	// Empty data and no version vector are a snapshot too.
	empty := &database.Snapshot{ServerSeq: 5}
	if err := db.SaveSnapshot(ctx, d.ID, 0, empty); err != nil {
		t.Fatal(err)
	}
	got = must(db.FindSnapshot(ctx, d.ID, 5)).get(t)
	if got.ServerSeq != 5 || len(got.Data) != 0 || len(got.VersionVector) != 0 || got.CreatedAt.IsZero() {
		t.Fatalf("empty snapshot read back as %+v", got)
	}

	// Refused saves.
	for _, seq := range []int64{0, -1, 6} {
		if err := db.SaveSnapshot(ctx, d.ID, 0, snapshotAt(seq, "bad")); err == nil {
			t.Fatalf("SaveSnapshot at server_seq %d of a log of 5 succeeded", seq)
		}
	}
	if err := db.SaveSnapshot(ctx, d.ID, 0, nil); err == nil {
		t.Fatal("SaveSnapshot of nil succeeded")
	}
	wantErr(t, db.SaveSnapshot(ctx, unknownID(), 0, snapshotAt(1, "x")), database.ErrDocumentNotFound, "SaveSnapshot of an unknown document")
	wantNoSnapshot(t, db, ctx, unknownID(), 10)
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 4)).get(t), want)

	// A removed document keeps its snapshots, as it keeps its log.
	if err := db.RemoveDocument(ctx, d.ID, 0); err != nil {
		t.Fatal(err)
	}
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 4)).get(t), want)
}

func testSnapshotAtOrBefore(t *testing.T, db database.Database) {
	ctx := testCtx(t)
	d := docWithLog(t, ctx, db, 20)
	other := docWithLog(t, ctx, db, 20)
	save := func(docID string, seq int64) {
		t.Helper()
		if err := db.SaveSnapshot(ctx, docID, 0, snapshotAt(seq, docID)); err != nil {
			t.Fatal(err)
		}
	}
	find := func(at, want int64) {
		t.Helper()
		if want == 0 {
			wantNoSnapshot(t, db, ctx, d.ID, at)
			return
		}
		assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, at)).get(t), snapshotAt(want, d.ID))
	}
	save(d.ID, 4)
	save(d.ID, 8)
	save(other.ID, 6) // another document's snapshots are not this one's
	find(3, 0)
	find(4, 4)
	find(7, 4)
	find(8, 8)
	find(20, 8)

	// A third snapshot retires the oldest (SnapshotsKept is 2).
	if database.SnapshotsKept != 2 {
		t.Fatalf("the case below assumes SnapshotsKept = 2, not %d", database.SnapshotsKept)
	}
	save(d.ID, 12)
	find(7, 0)
	find(11, 8)
	find(20, 12)
	// A snapshot older than the newest may still arrive late; it is kept if
	// it is among the newest two.
	save(d.ID, 10)
	find(9, 0)
	find(10, 10)
	find(11, 10)
	find(20, 12)
	// One older than both is dropped at once.
	save(d.ID, 2)
	find(9, 0)
	assertSnapshot(t, must(db.FindSnapshot(ctx, other.ID, 20)).get(t), snapshotAt(6, other.ID))
}

func testSnapshotFencing(t *testing.T, db database.Database) {
	ctx := testCtx(t)
	d := docWithLog(t, ctx, db, 4)
	must(db.ClaimDocument(ctx, d.ID, 1)).get(t)
	if err := db.SaveSnapshot(ctx, d.ID, 1, snapshotAt(2, "e1")); err != nil {
		t.Fatal(err)
	}
	must(db.ClaimDocument(ctx, d.ID, 2)).get(t)
	for _, old := range []int64{1, 0} {
		err := db.SaveSnapshot(ctx, d.ID, old, snapshotAt(4, "stale"))
		wantErr(t, err, database.ErrFenced, fmt.Sprintf("SaveSnapshot with epoch %d after 2", old))
	}
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 4)).get(t), snapshotAt(2, "e1"))
	if err := db.SaveSnapshot(ctx, d.ID, 2, snapshotAt(4, "e2")); err != nil {
		t.Fatalf("owner with epoch 2: %v", err)
	}
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 4)).get(t), snapshotAt(4, "e2"))
}

// testSnapshotLarge stores a snapshot larger than a MongoDB document may be,
// made of random bytes so that compression cannot shrink it under the limit.
func testSnapshotLarge(t *testing.T, db database.Database) {
	ctx := testCtx(t)
	d := docWithLog(t, ctx, db, 2)
	big := snapshotAt(2, "big")
	big.Data = make([]byte, 20<<20)
	_, _ = crand.Read(big.Data)
	if err := db.SaveSnapshot(ctx, d.ID, 0, big); err != nil {
		t.Fatal(err)
	}
	assertSnapshot(t, must(db.FindSnapshot(ctx, d.ID, 2)).get(t), big)

	// And a realistic one, which does compress.
	doc := snapshotAt(1, "doc")
	doc.Data = SnapshotData(1 << 20)
	if err := db.SaveSnapshot(ctx, d.ID, 0, doc); err != nil {
		t.Fatal(err)
	}
	got := must(db.FindSnapshot(ctx, d.ID, 1)).get(t)
	assertSnapshot(t, got, doc)
	if err := proto.Unmarshal(got.Data, &api.Snapshot{}); err != nil {
		t.Fatalf("the snapshot read back does not decode: %v", err)
	}
}

func testSnapshotContexts(t *testing.T, db database.Database) {
	ctx := testCtx(t)
	d := docWithLog(t, ctx, db, 3)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, database.ErrUnavailable) {
			t.Errorf("%s with an expired context: got %v, want DeadlineExceeded or ErrUnavailable", name, err)
		}
	}
	check("SaveSnapshot", db.SaveSnapshot(expired, d.ID, 0, snapshotAt(1, "late")))
	_, err := db.FindSnapshot(expired, d.ID, 3)
	check("FindSnapshot", err)
	wantNoSnapshot(t, db, ctx, d.ID, 3)

	// A save cancelled while it runs leaves the whole snapshot or nothing,
	// whenever the cancellation lands.
	big := snapshotAt(2, "cancelled")
	big.Data = make([]byte, 12<<20)
	_, _ = crand.Read(big.Data)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- db.SaveSnapshot(cctx, d.ID, 0, big) }()
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, database.ErrUnavailable) {
		t.Fatalf("cancelled SaveSnapshot: got %v, want nil, Canceled or ErrUnavailable", err)
	}
	if got, err := db.FindSnapshot(ctx, d.ID, 2); err == nil {
		assertSnapshot(t, got, big)
	} else if !errors.Is(err, database.ErrSnapshotNotFound) {
		t.Fatal(err)
	}
	// Whatever it left, the next save of the server_seq ends with a whole one.
	again := snapshotAt(2, "again")
	if err := db.SaveSnapshot(ctx, d.ID, 0, again); err != nil {
		t.Fatal(err)
	}
	got := must(db.FindSnapshot(ctx, d.ID, 2)).get(t)
	if !bytes.Equal(got.Data, big.Data) {
		assertSnapshot(t, got, again)
	}
}

// testSnapshotConcurrentSaves races saves of several server_seqs, each by
// two writers with different bytes, on two handles, while a reader reads.
// Every read must be a whole snapshot one writer saved, each server_seq
// keeps one writer's bytes, and the newest two server_seqs stay.
func testSnapshotConcurrentSaves(t *testing.T, newPair NewPair) {
	a, b := newPair(t)
	ctx := testCtx(t)
	d := docWithLog(t, ctx, a, 10)
	seqs := []int64{3, 5, 7, 9}
	// Writers of one server_seq save different bytes, so that a read
	// shows whose snapshot stayed and that it is not a mix.
	base := SnapshotData(256 << 10)
	data := make(map[int64][2][]byte)
	for _, seq := range seqs {
		var pair [2][]byte
		for w := range pair {
			pair[w] = append(fmt.Appendf(nil, "%d/%d:", seq, w), base...)
		}
		data[seq] = pair
	}
	oneOf := func(s *database.Snapshot) error {
		pair, ok := data[s.ServerSeq]
		if !ok {
			return fmt.Errorf("read a snapshot at %d, which nobody saved", s.ServerSeq)
		}
		if !bytes.Equal(s.Data, pair[0]) && !bytes.Equal(s.Data, pair[1]) {
			return fmt.Errorf("read %d bytes at %d that no writer saved", len(s.Data), s.ServerSeq)
		}
		return nil
	}

	var writers sync.WaitGroup
	errs := make(chan error, 2*len(seqs)+1)
	for _, seq := range seqs {
		for w, db := range []database.Database{a, b} {
			writers.Go(func() {
				s := snapshotAt(seq, "w")
				s.Data = data[seq][w]
				if err := db.SaveSnapshot(ctx, d.ID, 0, s); err != nil {
					errs <- fmt.Errorf("save %d/%d: %w", seq, w, err)
				}
			})
		}
	}
	stop := make(chan struct{})
	var reader sync.WaitGroup
	reads := 0
	reader.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, err := b.FindSnapshot(ctx, d.ID, 10)
			if errors.Is(err, database.ErrSnapshotNotFound) {
				continue
			}
			if err == nil {
				err = oneOf(s)
			}
			if err != nil {
				errs <- fmt.Errorf("read while saving: %w", err)
				return
			}
			reads++
		}
	})
	writers.Wait()
	close(stop)
	reader.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d whole reads while saving", reads)

	first := must(a.FindSnapshot(ctx, d.ID, 10)).get(t)
	if first.ServerSeq != 9 {
		t.Fatalf("newest snapshot after the race is at %d, want 9", first.ServerSeq)
	}
	second := must(b.FindSnapshot(ctx, d.ID, 8)).get(t)
	if second.ServerSeq != 7 {
		t.Fatalf("second newest snapshot after the race is at %d, want 7", second.ServerSeq)
	}
	for _, s := range []*database.Snapshot{first, second} {
		if err := oneOf(s); err != nil {
			t.Fatal(err)
		}
		// Both handles agree on which writer's bytes a server_seq keeps.
		for _, db := range []database.Database{a, b} {
			if again := must(db.FindSnapshot(ctx, d.ID, s.ServerSeq)).get(t); !bytes.Equal(again.Data, s.Data) {
				t.Fatalf("snapshot at %d changed bytes between reads", s.ServerSeq)
			}
		}
	}
	wantNoSnapshot(t, a, ctx, d.ID, 6)
}

// BenchSnapshot measures saving (sub-benchmark "save") and loading ("load")
// a snapshot of size bytes like a real document's.
func BenchSnapshot(b *testing.B, db database.Database, size int) {
	ctx := context.Background()
	data := SnapshotData(size)
	b.Run("save", func(b *testing.B) {
		d := benchDoc(b, ctx, db, b.N)
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
		for i := range b.N {
			if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: int64(i + 1), Data: data}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		d := benchDoc(b, ctx, db, 1)
		if err := db.SaveSnapshot(ctx, d.ID, 0, &database.Snapshot{ServerSeq: 1, Data: data}); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
		for range b.N {
			s, err := db.FindSnapshot(ctx, d.ID, 1)
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Data) != len(data) {
				b.Fatalf("loaded %d bytes, saved %d", len(s.Data), len(data))
			}
		}
	})
}

// benchDoc creates a document whose log holds n changes.
func benchDoc(b *testing.B, ctx context.Context, db database.Database, n int) *database.DocInfo {
	d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "bench-"+unknownID())
	if err != nil {
		b.Fatal(err)
	}
	actor := unknownID()
	for first := 1; first <= n; first += 500 {
		if err := db.AppendChanges(ctx, d.ID, 0, batch(actor, int64(first), uint32(first), min(500, n-first+1), "snap")); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// SnapshotData returns the binary yorkie.v1.Snapshot of a document like a
// shared board, of at least size bytes: a list of cards (objects of strings,
// numbers, booleans and a short array), a long rich text edited by a few
// actors with some removed runs, and the presences of a dozen clients.
// The same size always gives the same bytes, so that compression figures
// are comparable between runs.
func SnapshotData(size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(size), 7))
	actors := make([][]byte, 6)
	for i := range actors {
		actors[i] = make([]byte, 12)
		for j := range actors[i] {
			actors[i][j] = byte(rng.UintN(256))
		}
	}
	var lamport int64
	tick := func() *api.TimeTicket {
		lamport += 1 + int64(rng.IntN(3))
		return &api.TimeTicket{Lamport: lamport, Delimiter: uint32(rng.IntN(4)), ActorId: actors[rng.IntN(len(actors))]}
	}
	words := strings.Fields("the quick brown fox jumps over a lazy dog while yorkie keeps every replica " +
		"in sync and the board shows cards tasks notes ideas done todo urgent später équipe 協力")
	phrase := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	prim := func(t api.ValueType, v []byte) *api.JSONElement {
		return &api.JSONElement{Body: &api.JSONElement_Primitive_{Primitive: &api.JSONElement_Primitive{
			Type: t, Value: v, CreatedAt: tick(),
		}}}
	}
	card := func(i int) *api.JSONElement {
		tags := &api.JSONElement_JSONArray{CreatedAt: tick()}
		for range 1 + rng.IntN(4) {
			tags.Nodes = append(tags.Nodes, &api.RGANode{Element: prim(api.ValueType_VALUE_TYPE_STRING, []byte(words[rng.IntN(len(words))]))})
		}
		obj := &api.JSONElement_JSONObject{CreatedAt: tick(), Nodes: []*api.RHTNode{
			{Key: "id", Element: prim(api.ValueType_VALUE_TYPE_STRING, []byte(fmt.Sprintf("card-%06d", i)))},
			{Key: "title", Element: prim(api.ValueType_VALUE_TYPE_STRING, []byte(phrase(3+rng.IntN(6))))},
			{Key: "x", Element: prim(api.ValueType_VALUE_TYPE_INTEGER, []byte{byte(rng.IntN(256)), byte(rng.IntN(8)), 0, 0})},
			{Key: "y", Element: prim(api.ValueType_VALUE_TYPE_INTEGER, []byte{byte(rng.IntN(256)), byte(rng.IntN(8)), 0, 0})},
			{Key: "done", Element: prim(api.ValueType_VALUE_TYPE_BOOLEAN, []byte{byte(rng.IntN(2))})},
			{Key: "tags", Element: &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: tags}}},
		}}
		if rng.IntN(5) == 0 {
			obj.RemovedAt = tick()
		}
		return &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: obj}}
	}
	cards := &api.JSONElement_JSONArray{CreatedAt: tick()}
	text := &api.JSONElement_Text{CreatedAt: tick()}
	root := &api.JSONElement_JSONObject{CreatedAt: &api.TimeTicket{}, Nodes: []*api.RHTNode{
		{Key: "cards", Element: &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: cards}}},
		{Key: "notes", Element: &api.JSONElement{Body: &api.JSONElement_Text_{Text: text}}},
	}}
	snap := &api.Snapshot{
		Root:      &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: root}},
		Presences: make(map[string]*api.Presence),
	}
	for i := range 12 {
		snap.Presences[fmt.Sprintf("%024x", i+1)] = &api.Presence{Data: map[string]string{
			"name":   fmt.Sprintf("%q", "user "+words[i]),
			"color":  fmt.Sprintf(`"#%06x"`, rng.IntN(1<<24)),
			"cursor": fmt.Sprintf(`{"x":%d,"y":%d}`, rng.IntN(2000), rng.IntN(2000)),
		}}
	}
	var prev *api.TextNodeID
	// Sizes are summed per added node (plus a few bytes of framing), since
	// measuring the whole message each round would be quadratic.
	for n, est := 0, proto.Size(snap); est < size || proto.Size(snap) < size; n++ {
		// Per round: one card and a few text runs, about 1 KB.
		c := &api.RGANode{Element: card(n)}
		cards.Nodes = append(cards.Nodes, c)
		est += proto.Size(c) + 4
		for range 4 {
			id := &api.TextNodeID{CreatedAt: tick(), Offset: int32(rng.IntN(3))}
			node := &api.TextNode{Id: id, Value: phrase(1 + rng.IntN(5)), InsPrevId: prev}
			if rng.IntN(6) == 0 {
				node.RemovedAt = tick()
			}
			if rng.IntN(4) == 0 {
				node.Attributes = map[string]*api.NodeAttr{"bold": {Value: "true", UpdatedAt: tick()}}
			}
			text.Nodes = append(text.Nodes, node)
			est += proto.Size(node) + 4
			prev = id
		}
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(snap)
	if err != nil {
		panic(fmt.Sprintf("encode generated snapshot: %v", err)) // cannot happen: the message is well formed
	}
	return out
}
