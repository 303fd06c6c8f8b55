package backend_test

import (
	"context"
	"fmt"
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
// the head. Besides the time per PushPull it reports the 99th percentile
// and the slowest PushPull, and how long the lock was held per answer.
func BenchmarkPushPullWhileLateJoinersAttach(b *testing.B) {
	ctx := context.Background()
	be, err := backend.New(backend.Config{DB: memory.New(), SnapshotInterval: 200, SnapshotThreshold: 100})
	if err != nil {
		b.Fatal(err)
	}
	ws := attachWriters(b, be)
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
			if docID, resp, err = be.AttachDocument(ctx, defaultProject, 0, id, "doc", pack(0, 0)); err == nil {
				_, err = be.DetachDocument(ctx, defaultProject, 0, id, docID, pack(resp.GetCheckpoint().GetServerSeq(), 0))
			}
		}
		joiners <- err
	}()

	lat := runWriters(b, ws)
	b.StopTimer()
	stop.Store(true)
	if err := <-joiners; err != nil {
		b.Fatal(err)
	}
	if err := be.Close(ctx); err != nil {
		b.Fatal(err)
	}
	reportLatency(b, lat)
	if sent := m.SnapshotsSent.Load() - sentBefore; sent > 0 {
		held := time.Duration(m.AnswerLockNanos.Load() - heldBefore)
		b.ReportMetric(float64(held.Microseconds())/float64(sent), "lock-us/answer")
		b.ReportMetric(float64(sent), "answers")
	}
}
