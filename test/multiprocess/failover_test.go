// Package multiprocess_test runs several yorkie server processes, built from
// cmd/yorkie, against one database and checks what clients see when a
// process is killed or stopped.
package multiprocess_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	mongodb "github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// testTimeout bounds a whole scenario; it only ends broken runs.
const testTimeout = 2 * time.Minute

// killWindow is how long a kill waits for a change stored but not yet
// acknowledged before it kills anyway.
const killWindow = 5 * time.Second

// mongoDatabase returns a MongoDB-wire server and a database for the test,
// dropped at the end when the server is an external one.
func mongoDatabase(t *testing.T) (uri, name string) {
	t.Helper()
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)
	return m.URI, m.Database
}

// dialDatabase opens the servers' database directly, to watch the log.
func dialDatabase(t *testing.T, uri, name string) *mongodb.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := mongodb.Dial(ctx, mongodb.Config{URI: uri, Database: name, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("dial the servers' database: %v", err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}

// raise sets v to n unless it holds more already.
func raise(v *atomic.Int64, n int64) {
	for cur := v.Load(); n > cur; cur = v.Load() {
		if v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// ack is a change the server acknowledged, with the server_seq it got.
type ack struct {
	clientSeq uint32
	serverSeq int64
}

// TestKilledProcessLosesNoAcknowledgedChange kills the server clients write
// through in the middle of their pushes and lets them carry on through a
// second process on the same database: nothing the first acknowledged may be
// lost, reordered or stored twice, and the log stays one gapless sequence.
func TestKilledProcessLosesNoAcknowledgedChange(t *testing.T) {
	uri, dbName := mongoDatabase(t)
	a := StartServer(t, ServerOptions{Name: "yorkie-a", MongoURI: uri, MongoDatabase: dbName})
	b := StartServer(t, ServerOptions{Name: "yorkie-b", MongoURI: uri, MongoDatabase: dbName})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	const (
		writers        = 3
		acksBeforeKill = 15
		editsAfter     = 4
		docKey         = "killed-process-doc"
	)
	ws := make([]*wire.Replica, writers)
	for i := range ws {
		w, err := wire.Activate(ctx, a.Client(t), fmt.Sprintf("writer-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.AttachWith(ctx, docKey, map[string]string{"name": fmt.Sprintf(`"writer-%d"`, i)}); err != nil {
			t.Fatalf("through %s: %v", a.Name, err)
		}
		ws[i] = w
	}

	// Every writer pushes one new change at a time through A until a call
	// fails, recording the server_seq of each acknowledged change.
	var (
		killed   atomic.Bool
		inFlight atomic.Int64
		acked    atomic.Int64
		maxAcked atomic.Int64
		stopped  atomic.Int64
		wg       sync.WaitGroup
	)
	acks := make([][]ack, writers)
	lastErr := make([]error, writers)
	failedEarly := make([]bool, writers)
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stopped.Add(1)
			for ctx.Err() == nil {
				ch := w.NewChange(nil)
				inFlight.Add(1)
				p, err := w.PushPull(ctx)
				inFlight.Add(-1)
				if err != nil {
					lastErr[i], failedEarly[i] = err, !killed.Load()
					return
				}
				if w.Acked != ch.GetId().GetClientSeq() || len(w.Pending) != 0 {
					lastErr[i] = fmt.Errorf("writer %d: pushed client_seq %d alone, server acknowledged %d", i, ch.GetId().GetClientSeq(), w.Acked)
					failedEarly[i] = true
					return
				}
				// One new change per call: the checkpoint's server_seq is
				// the one it was stored at.
				seq := p.GetCheckpoint().GetServerSeq()
				acks[i] = append(acks[i], ack{ch.GetId().GetClientSeq(), seq})
				raise(&maxAcked, seq)
				acked.Add(1)
			}
		}()
	}
	// Kill A once enough changes are acknowledged, preferably at a moment
	// when it has stored a change but not yet answered for it: the worst
	// case for the client, which must re-send it through B.
	for acked.Load() < acksBeforeKill {
		if ctx.Err() != nil || stopped.Load() == writers {
			a.Kill()
			wg.Wait()
			t.Fatalf("only %d changes acknowledged through %s before the writers stopped or the deadline (errors: %v)", acked.Load(), a.Name, lastErr)
		}
		time.Sleep(time.Millisecond)
	}
	db := dialDatabase(t, uri, dbName)
	docID := ws[0].DocID
	giveUp := time.Now().Add(killWindow)
	for time.Now().Before(giveUp) {
		head := maxAcked.Load()
		stored, err := db.FindChanges(ctx, docID, head+1, head+1)
		if err != nil {
			t.Fatalf("read the log from the database: %v", err)
		}
		if len(stored) > 0 && maxAcked.Load() == head && inFlight.Load() > 0 {
			break
		}
	}
	killed.Store(true)
	a.Kill()
	wg.Wait()

	seqAtKill := make([]uint32, writers)
	unsure := 0
	maxAckedByA := int64(0)
	for i, w := range ws {
		if failedEarly[i] {
			t.Fatalf("writer %d failed before %s was killed: %v", i, a.Name, lastErr[i])
		}
		seqAtKill[i] = w.LastSeq
		unsure += len(w.Pending)
		for _, k := range acks[i] {
			maxAckedByA = max(maxAckedByA, k.serverSeq)
		}
	}
	// What A left behind: everything it acknowledged, and perhaps changes it
	// stored but could not acknowledge any more.
	probe, err := wire.Activate(ctx, b.Client(t), "probe")
	if err != nil {
		t.Fatal(err)
	}
	// The processes share the mongo session store (the default with a
	// MongoDB), so B serves the document once A's lease has run out; until
	// then it answers Unavailable, as the SDK retries.
	var p *api.ChangePack
	untilServed(t, b, "attach", func() (err error) {
		p, err = attachPack(ctx, probe, docKey, nil)
		return err
	})
	headAtKill := p.GetCheckpoint().GetServerSeq()
	if headAtKill < maxAckedByA {
		t.Fatalf("after the kill the log ends at %d, below server_seq %d that %s acknowledged", headAtKill, maxAckedByA, a.Name)
	}
	t.Logf("%s acknowledged %d changes (highest server_seq %d); %d pushes were cut off by SIGKILL, of which %d were stored",
		a.Name, acked.Load(), maxAckedByA, unsure, headAtKill-maxAckedByA)

	// The same clients continue through B: the first call re-sends what A
	// never acknowledged.
	errsB := make([]error, writers)
	for i, w := range ws {
		w.C = b.Client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range editsAfter {
				w.NewChange(nil)
				if _, err := w.PushPull(ctx); err != nil {
					errsB[i] = fmt.Errorf("writer %d through %s: %w", i, b.Name, err)
					return
				}
			}
			if len(w.Pending) != 0 {
				errsB[i] = fmt.Errorf("writer %d: %d changes still unacknowledged through %s", i, len(w.Pending), b.Name)
			}
		}()
	}
	wg.Wait()
	for _, err := range errsB {
		if err != nil {
			t.Fatal(err)
		}
	}

	// A fresh client pulls the whole log through B, storing nothing itself.
	reader, err := wire.Activate(ctx, b.Client(t), "log-reader")
	if err != nil {
		t.Fatal(err)
	}
	p, err = attachPack(ctx, reader, docKey, nil)
	if err != nil {
		t.Fatalf("through %s: %v", b.Name, err)
	}
	log := entries(p)
	if head := p.GetCheckpoint().GetServerSeq(); head != int64(len(log)) {
		t.Fatalf("pulled %d changes, checkpoint says the log ends at %d", len(log), head)
	}
	at := map[string]int64{} // actor/client_seq -> server_seq
	for i, e := range log {
		if e.serverSeq != int64(i+1) {
			t.Fatalf("change %d of the log has server_seq %d: the log has a gap or a duplicate", i, e.serverSeq)
		}
		k := fmt.Sprintf("%s/%d", e.actor, e.clientSeq)
		if prev, ok := at[k]; ok {
			t.Fatalf("change %s stored twice, at server_seq %d and %d", k, prev, e.serverSeq)
		}
		at[k] = e.serverSeq
	}
	for i, w := range ws {
		// Every change a writer made is in the log once, in its order.
		prev := int64(0)
		for seq := uint32(1); seq <= w.LastSeq; seq++ {
			got, ok := at[fmt.Sprintf("%s/%d", w.ID, seq)]
			if !ok {
				t.Fatalf("writer %d: change %d is not in the log", i, seq)
			}
			if got < prev {
				t.Fatalf("writer %d: change %d stored at %d, before its change %d at %d", i, seq, got, seq-1, prev)
			}
			prev = got
			if seq > seqAtKill[i] && got <= maxAckedByA {
				t.Fatalf("writer %d: change %d made after the kill stored at %d, not after the %d changes %s acknowledged", i, seq, got, maxAckedByA, a.Name)
			}
		}
		for _, k := range acks[i] {
			if got := at[fmt.Sprintf("%s/%d", w.ID, k.clientSeq)]; got != k.serverSeq {
				t.Fatalf("writer %d: %s acknowledged change %d at server_seq %d, the log has it at %d", i, a.Name, k.clientSeq, k.serverSeq, got)
			}
		}
	}

	// A second client attached through B afterwards sees every edit.
	late, err := wire.Activate(ctx, b.Client(t), "late-reader")
	if err != nil {
		t.Fatal(err)
	}
	p, err = attachPack(ctx, late, docKey, map[string]string{"name": `"late"`})
	if err != nil {
		t.Fatalf("through %s: %v", b.Name, err)
	}
	var want []string
	for _, w := range ws {
		for seq := uint32(2); seq <= w.LastSeq; seq++ { // 1 is the presence of attaching
			want = append(want, w.SetKey(seq))
		}
	}
	got := setKeys(p)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("late client sees keys %v, want %v", got, want)
	}
	if n := len(entries(p)); n != len(log) {
		t.Fatalf("late client pulled %d changes, the log read before has %d", n, len(log))
	}
}

// untilServed retries call while s answers Unavailable: a document whose
// owner was killed is served by another node once the owner's lease has run
// out. Any other error fails the test.
func untilServed(t *testing.T, s *Server, what string, call func() error) {
	t.Helper()
	poll.Until(t, testTimeout, what+" through "+s.Name, func() error {
		err := call()
		if err != nil && connect.CodeOf(err) != connect.CodeUnavailable {
			t.Fatalf("%s through %s: %v", what, s.Name, err)
		}
		return err
	})
}

// TestTerminatedProcessStopsGracefully stops a server with SIGTERM: it must
// exit on its own, after its graceful shutdown.
func TestTerminatedProcessStopsGracefully(t *testing.T) {
	s := StartServer(t, ServerOptions{Name: "yorkie-term"})
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := s.Terminate(ctx); err != nil {
		t.Fatal(err)
	}
	if out := s.Output(); !strings.Contains(out, "server stopped") {
		t.Fatalf("%s exited without finishing its shutdown:\n%s", s.Name, out)
	}
}

// TestFailbackKeepsClientsSyncing moves clients between two processes on one
// database the way a load balancer does when the process it prefers dies and
// comes back: A, then B, then A again (restarted), then B again. Every move
// follows a failure, so the clients simply carry on with their pending
// changes. B served the document before, and must not hold on to what it
// learned then: each push has to be accepted wherever it lands.
func TestFailbackKeepsClientsSyncing(t *testing.T) {
	uri, dbName := mongoDatabase(t)
	a := StartServer(t, ServerOptions{Name: "yorkie-a", MongoURI: uri, MongoDatabase: dbName})
	b := StartServer(t, ServerOptions{Name: "yorkie-b", MongoURI: uri, MongoDatabase: dbName})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	const docKey = "failback-doc"

	// tryPush makes one change of w and pushes it through s.
	tryPush := func(w *wire.Replica, s *Server, round string) error {
		w.C = s.Client(t)
		w.NewChange(nil)
		if _, err := w.PushPull(ctx); err != nil {
			return fmt.Errorf("%s: push through %s: %w", round, s.Name, err)
		}
		if len(w.Pending) != 0 {
			return fmt.Errorf("%s: %s left %d changes unacknowledged", round, s.Name, len(w.Pending))
		}
		return nil
	}
	push := func(w *wire.Replica, s *Server, round string) {
		t.Helper()
		if err := tryPush(w, s, round); err != nil {
			t.Fatal(err)
		}
	}

	// Round 1: x works through A.
	x, err := wire.Activate(ctx, a.Client(t), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.AttachWith(ctx, docKey, map[string]string{"name": `"x"`}); err != nil {
		t.Fatal(err)
	}
	push(x, a, "round 1")

	// Round 2: A dies, x carries on through B once A's lease has run out
	// (the processes share the mongo session store).
	a.Kill()
	untilServed(t, b, "round 2 (A killed)", func() error { return tryPush(x, b, "round 2 (A killed)") })

	// Round 3: A is back and preferred again; y joins through it.
	a.Restart(t)
	push(x, a, "round 3 (A restarted)")
	push(x, a, "round 3 (A restarted)")
	y, err := wire.Activate(ctx, a.Client(t), "y")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := y.AttachWith(ctx, docKey, map[string]string{"name": `"y"`}); err != nil {
		t.Fatal(err)
	}
	push(y, a, "round 3 (A restarted)")

	// Round 4: A dies again; both carry on through B.
	a.Kill()
	untilServed(t, b, "round 4 (A killed again), x", func() error { return tryPush(x, b, "round 4 (A killed again), x") })
	push(y, b, "round 4 (A killed again), y")

	// Both see each other's edits, and the log read through B is whole.
	reader, err := wire.Activate(ctx, b.Client(t), "failback-reader")
	if err != nil {
		t.Fatal(err)
	}
	p, err := attachPack(ctx, reader, docKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries(p) {
		if e.serverSeq != int64(i+1) {
			t.Fatalf("change %d of the log has server_seq %d", i, e.serverSeq)
		}
	}
	if got, want := len(setKeys(p)), int(x.LastSeq-1+y.LastSeq-1); got != want {
		t.Fatalf("the document holds %d edits, the clients made %d", got, want)
	}
}
