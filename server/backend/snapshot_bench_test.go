package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// BenchmarkPushPullWhileSnapshotting measures PushPulls of one change each,
// by 4 clients at once, on a document of 10,000 keys that takes a snapshot
// every 200 changes. Besides the time per PushPull it reports the 99th
// percentile and the slowest PushPull, and how long the lock was held per
// snapshot. Run it with -benchtime=2000x or more so that snapshots are taken.
func BenchmarkPushPullWhileSnapshotting(b *testing.B) {
	ctx := context.Background()
	be, err := backend.New(backend.Config{DB: memory.New(), SnapshotInterval: 200, SnapshotThreshold: -1})
	if err != nil {
		b.Fatal(err)
	}
	ws := attachWriters(b, be)
	m := be.Metrics()
	heldBefore := m.SnapshotLockNanos.Load()
	dueBefore := m.SnapshotsStored.Load() + m.SnapshotsCoalesced.Load() + m.SnapshotFailures.Load()

	lat := runWriters(b, ws)
	// The runs still under way are part of the work measured.
	if err := be.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	reportLatency(b, lat)
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
