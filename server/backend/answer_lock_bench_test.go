package backend_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// BenchmarkPushPullWhileLateJoinersAttach measures PushPulls of one change
// each, by 4 clients at once, on a document of 10,000 keys while late
// joiners keep attaching (and detaching), each answered with a snapshot of
// the head: with the answer encoded under the document's lock (the baseline)
// and off it. Besides the time per PushPull it reports the 99th percentile
// and the slowest PushPull, and how long the lock was held per answer.
func BenchmarkPushPullWhileLateJoinersAttach(b *testing.B) {
	for _, mode := range []struct {
		name      string
		underLock bool
	}{{"under-lock", true}, {"off-lock", false}} {
		b.Run("answer="+mode.name, func(b *testing.B) {
			benchLateJoiners(b, mode.underLock)
		})
	}
}

func benchLateJoiners(b *testing.B, underLock bool) {
	const (
		keys    = 10000
		clients = 4
	)
	ctx := context.Background()
	be, err := backend.New(backend.Config{DB: memory.New(), SnapshotInterval: 200, SnapshotThreshold: 100})
	if err != nil {
		b.Fatal(err)
	}
	backend.SetAnswerUnderLock(be, underLock)
	ws := make([]*writer, clients)
	for i := range ws {
		ws[i] = newWriter(b, be, fmt.Sprint("w", i))
		ws[i].attach("doc")
	}
	for lo := 0; lo < keys; lo += 100 {
		ws[0].mustPush(ws[0].change(func(at *api.TimeTicket) []*api.Operation {
			ops := make([]*api.Operation, 0, 100)
			for k := lo; k < lo+100; k++ {
				t := &api.TimeTicket{Lamport: at.Lamport, Delimiter: uint32(k - lo + 1), ActorId: at.ActorId}
				ops = append(ops, setOp(rootTicket(), fmt.Sprint("k", k), "initial value", t))
			}
			return ops
		}))
	}
	for _, w := range ws {
		w.mustPush()
	}
	m := be.Metrics()
	heldBefore, sentBefore := m.AnswerLockNanos.Load(), m.SnapshotsSent.Load()

	var stop atomic.Bool
	joiners := make(chan error, 1)
	go func() {
		// One late joiner at a time, for as long as the writers run.
		var err error
		for n := 0; !stop.Load() && err == nil; n++ {
			id := activate(b, be, fmt.Sprint("late", n))
			var docID string
			var resp *api.ChangePack
			if docID, resp, err = be.AttachDocument(ctx, 0, id, "doc", pack(0, 0)); err == nil {
				_, err = be.DetachDocument(ctx, 0, id, docID, pack(resp.GetCheckpoint().GetServerSeq(), 0))
			}
		}
		joiners <- err
	}()

	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := ws[c]
			for i := c; i < b.N; i += clients {
				start := time.Now()
				if _, err := w.push(w.set(fmt.Sprint("k", i*7919%keys), fmt.Sprint(i))); err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	stop.Store(true)
	if err := <-joiners; err != nil {
		b.Fatal(err)
	}
	if err := be.Close(ctx); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-us")
		b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-us")
	}
	if sent := m.SnapshotsSent.Load() - sentBefore; sent > 0 {
		held := time.Duration(m.AnswerLockNanos.Load() - heldBefore)
		b.ReportMetric(float64(held.Microseconds())/float64(sent), "lock-us/answer")
		b.ReportMetric(float64(sent), "answers")
	}
}
