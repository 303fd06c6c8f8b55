package integration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// fencingTimeout bounds one fencing scenario; it only ends broken runs.
const fencingTimeout = time.Minute

// TestFencedOwnerStoresNothingMore runs two servers that both believe they
// own one document, A with owner epoch 1 and B with epoch 2, on one
// database. Clients push through both at once. Once B has claimed the
// document, A must refuse every write with a retryable error and store
// nothing more, the log must stay one gapless sequence, and the clients A
// turned away must get every change accepted by re-sending through B.
func TestFencedOwnerStoresNothingMore(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		db := memory.New()
		testFencing(t, db, db)
	})
	t.Run("mongo", func(t *testing.T) {
		m := testenv.MongoURI(t)
		// Two handles on one database, as two server processes have.
		testFencing(t, dbtest.DialMongo(t, m, m.Database), dbtest.DialMongo(t, m, m.Database))
	})
}

// pushRecord is one PushPull a client sent to the old owner.
type pushRecord struct {
	start time.Time
	err   error
}

func testFencing(t *testing.T, dbA, dbB database.Database) {
	ownerEpoch := func(epoch int64) []server.Option {
		return []server.Option{server.WithRouter(servertest.OwnerRouter(epoch))}
	}
	a := servertest.StartWith(t, ownerEpoch(1), func(c *server.Config) { c.DB = dbA })
	b := servertest.StartWith(t, ownerEpoch(2), func(c *server.Config) { c.DB = dbB })
	ca := servertest.Client(t, a, servertest.ConnectJSON)
	cb := servertest.Client(t, b, servertest.ConnectJSON)
	ctx, cancel := context.WithTimeout(context.Background(), fencingTimeout)
	defer cancel()
	docKey := wire.UniqueKey(t, "doc")

	// A serves the document first: its clients attach and push through it.
	const aClients, bClients, bEdits = 3, 2, 5
	onA := make([]*wire.Replica, aClients)
	for i := range onA {
		onA[i] = newReplica(t, ca)
		onA[i].MustAttach(docKey)
		onA[i].Edit(1)
		onA[i].MustPushPull()
	}

	// A's clients keep pushing, one new change per call, until A refuses.
	var (
		wg        sync.WaitGroup
		successes atomic.Int64
	)
	pushes := make([][]pushRecord, aClients)
	for i, r := range onA {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				r.Edit(1)
				start := time.Now()
				_, err := r.PushPull(ctx)
				pushes[i] = append(pushes[i], pushRecord{start: start, err: err})
				if err != nil {
					return
				}
				successes.Add(1)
			}
		}()
	}
	// While they push, B's clients attach: B claims the document.
	for successes.Load() < 2*aClients {
		if ctx.Err() != nil {
			t.Fatalf("A acknowledged only %d pushes before the deadline", successes.Load())
		}
		time.Sleep(time.Millisecond)
	}
	onB := make([]*wire.Replica, bClients)
	for i := range onB {
		onB[i] = newReplica(t, cb)
		if _, err := onB[i].Attach(ctx, docKey); err != nil {
			t.Fatalf("attach through B: %v", err)
		}
	}
	claimed := time.Now()
	bErrs := make([]error, bClients)
	for i, r := range onB {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range bEdits {
				r.Edit(1)
				if _, err := r.PushPull(ctx); err != nil {
					bErrs[i] = fmt.Errorf("client %d through B: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(bErrs...); err != nil {
		t.Fatal(err)
	}

	lateAccepted := 0
	for i, ps := range pushes {
		last := ps[len(ps)-1]
		if last.err == nil {
			t.Fatalf("client %d on A: pushes ended without an error (%v)", i, ctx.Err())
		}
		wantError(t, last.err, connect.CodeUnavailable, errinfo.CodeUnavailable)
		for _, p := range ps[:len(ps)-1] {
			if p.start.After(claimed) {
				lateAccepted++
			}
		}
	}
	if lateAccepted > 0 {
		t.Fatalf("A acknowledged %d pushes that began after B had claimed the document", lateAccepted)
	}

	// A keeps refusing and stores nothing more.
	before := len(fencingLog(t, dbB, onA[0].DocID))
	for i, r := range onA {
		r.Edit(1)
		_, err := r.PushPull(ctx)
		if err == nil {
			t.Fatalf("client %d: A acknowledged a push after it was fenced", i)
		}
		wantError(t, err, connect.CodeUnavailable, errinfo.CodeUnavailable)
	}
	if after := len(fencingLog(t, dbB, onA[0].DocID)); after != before {
		t.Fatalf("the log grew from %d to %d changes through the fenced owner", before, after)
	}

	// The turned-away clients re-send everything through B, as the SDK does.
	for i, r := range onA {
		r.C = cb
		if _, err := r.PushPull(ctx); err != nil {
			t.Fatalf("client %d re-sending through B: %v", i, err)
		}
		if len(r.Pending) != 0 || r.Acked != r.LastSeq {
			t.Fatalf("client %d: B acknowledged up to %d of %d changes", i, r.Acked, r.LastSeq)
		}
	}

	log := fencingLog(t, dbB, onA[0].DocID)
	checkGapless(t, log)
	for i, r := range append(onA, onB...) {
		checkAllStoredOnce(t, fmt.Sprintf("client %d", i), r, log)
	}
	t.Logf("A acknowledged %d pushes, B claimed, the log holds %d changes", successes.Load()+aClients, len(log))

	// A new client of B sees the whole document.
	late := newReplica(t, cb)
	late.MustAttach(docKey)
	for _, r := range append(onA, onB...) {
		for seq := uint32(1); seq <= r.LastSeq; seq++ {
			if late.ByLabel[r.Label(r.Generation, seq)] != 1 {
				t.Fatalf("a client attached afterwards did not get change %s", r.Label(r.Generation, seq))
			}
		}
	}
}

// fencingLog reads the document's whole stored log.
func fencingLog(t *testing.T, db database.Database, docID string) []*database.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wire.WaitTimeout)
	defer cancel()
	log, err := db.FindChanges(ctx, docID, 1, 1<<62)
	if err != nil {
		t.Fatalf("read the log of %s: %v", docID, err)
	}
	return log
}

// checkGapless fails unless the log's server_seq values run 1, 2, 3, ...
// and every body carries its own server_seq.
func checkGapless(t *testing.T, log []*database.Change) {
	t.Helper()
	for i, c := range log {
		if c.ServerSeq != int64(i+1) {
			t.Fatalf("change %d of the log has server_seq %d: a gap or a duplicate", i, c.ServerSeq)
		}
		if got := c.Body.GetId().GetServerSeq(); got != c.ServerSeq {
			t.Fatalf("server_seq %d stored with a body saying %d", c.ServerSeq, got)
		}
	}
}

// checkAllStoredOnce fails unless every change the replica made in its
// attachment is in the log exactly once, in the replica's order.
func checkAllStoredOnce(t *testing.T, who string, r *wire.Replica, log []*database.Change) {
	t.Helper()
	var seqs []uint32
	for _, c := range log {
		if c.ActorID == r.ID {
			seqs = append(seqs, c.ClientSeq)
		}
	}
	if len(seqs) != int(r.LastSeq) {
		t.Fatalf("%s made %d changes, the log has %d of it: %v", who, r.LastSeq, len(seqs), seqs)
	}
	for i, s := range seqs {
		if s != uint32(i+1) {
			t.Fatalf("%s: the log holds its changes as %v, want 1..%d once each in order", who, seqs, r.LastSeq)
		}
	}
}
