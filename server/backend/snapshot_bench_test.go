package backend_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// BenchmarkPushPullWhileSnapshotting measures PushPulls of one change each,
// by 4 clients at once, on a document of 10,000 keys that takes a snapshot
// every 200 changes: with the snapshot encoded under the document's lock (the
// baseline) and off it. Besides the time per PushPull it reports the 99th
// percentile and the slowest PushPull, and how long the lock was held per
// snapshot. Run it with -benchtime=2000x or more so that snapshots are taken.
func BenchmarkPushPullWhileSnapshotting(b *testing.B) {
	for _, mode := range []struct {
		name      string
		underLock bool
	}{{"under-lock", true}, {"off-lock", false}} {
		b.Run("snapshot="+mode.name, func(b *testing.B) {
			benchSnapshotting(b, mode.underLock)
		})
	}
}

func benchSnapshotting(b *testing.B, underLock bool) {
	const (
		keys     = 10000
		clients  = 4
		interval = 200
	)
	ctx := context.Background()
	be, err := backend.New(backend.Config{DB: memory.New(), SnapshotInterval: interval, SnapshotThreshold: -1})
	if err != nil {
		b.Fatal(err)
	}
	backend.SetEncodeUnderLock(be, underLock)
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
	heldBefore := m.SnapshotLockNanos.Load()
	dueBefore := m.SnapshotsStored.Load() + m.SnapshotsCoalesced.Load() + m.SnapshotFailures.Load()

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
	// The runs still under way are part of the work measured.
	if err := be.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-us")
		b.ReportMetric(float64(all[len(all)-1].Microseconds()), "max-us")
	}
	due := m.SnapshotsStored.Load() + m.SnapshotsCoalesced.Load() + m.SnapshotFailures.Load() - dueBefore
	if due > 0 {
		held := time.Duration(m.SnapshotLockNanos.Load() - heldBefore)
		b.ReportMetric(float64(held.Microseconds())/float64(due), "lock-us/snapshot")
	}
	b.ReportMetric(float64(due), "snapshots")
	if m.SnapshotFailures.Load() != 0 {
		b.Fatalf("%d snapshots failed", m.SnapshotFailures.Load())
	}
}
