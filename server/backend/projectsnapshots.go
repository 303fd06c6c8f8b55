package backend

import (
	"context"

	"github.com/yorkie-affinity/yorkie/server/project"
)

// snapThresholdFor is the snapshot threshold of the call's project: its
// own when it sets one (UpdateProject's snapshot_threshold), else the
// server's.
func (b *Backend) snapThresholdFor(ctx context.Context) int64 {
	if p := project.FromContext(ctx); p != nil && p.SnapshotThreshold > 0 {
		return p.SnapshotThreshold
	}
	return b.snapThreshold
}

// snapIntervalFor is snapThresholdFor for the snapshot interval. A server
// that stores no snapshots (negative --backend-snapshot-interval) stores
// none for any project.
func (b *Backend) snapIntervalFor(ctx context.Context) int64 {
	if p := project.FromContext(ctx); p != nil && p.SnapshotInterval > 0 && b.snapInterval > 0 {
		return p.SnapshotInterval
	}
	return b.snapInterval
}
