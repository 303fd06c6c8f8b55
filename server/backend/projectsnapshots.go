package backend

import "github.com/yorkie-affinity/yorkie/server/backend/database"

// snapThresholdFor is the snapshot threshold of project p: its own when it
// sets one (UpdateProject's snapshot_threshold), else the server's.
func (b *Backend) snapThresholdFor(p *database.ProjectInfo) int64 {
	if p.SnapshotThreshold > 0 {
		return p.SnapshotThreshold
	}
	return b.snapThreshold
}

// snapIntervalFor is snapThresholdFor for the snapshot interval. A server
// that stores no snapshots (negative --backend-snapshot-interval) stores
// none for any project.
func (b *Backend) snapIntervalFor(p *database.ProjectInfo) int64 {
	if p.SnapshotInterval > 0 && b.snapInterval > 0 {
		return p.SnapshotInterval
	}
	return b.snapInterval
}
