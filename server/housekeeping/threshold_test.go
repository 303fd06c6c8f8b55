package housekeeping_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
)

// TestThresholdIsReadEachRun: a threshold source (the project's setting)
// replaces the configured one and is asked again on every run, so an
// operator's change applies without a restart; a failing source skips the
// scan rather than guessing.
func TestThresholdIsReadEachRun(t *testing.T) {
	db := memory.New()
	c := &testclock.Clock{}
	var threshold atomic.Int64
	threshold.Store(int64(48 * time.Hour))
	var fail atomic.Bool
	h, err := housekeeping.New(housekeeping.Config{
		Interval:            time.Minute,
		DeactivateThreshold: 24 * time.Hour,
		Threshold: func(_ context.Context, fallback time.Duration) (time.Duration, error) {
			if fallback != 24*time.Hour {
				t.Errorf("fallback %v, want the configured 24h", fallback)
			}
			if fail.Load() {
				return 0, errors.New("database down")
			}
			return time.Duration(threshold.Load()), nil
		},
		DB:      db,
		Tracker: housekeeping.NewTracker(),
		Deactivate: func(ctx context.Context, c *database.ClientInfo) error {
			_, err := db.DeactivateClient(ctx, c.ProjectID, c.ID)
			return err
		},
		Now: c.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := db.ActivateClient(t.Context(), database.DefaultProjectID, "idle", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(30 * time.Hour)
	if r := h.RunOnce(t.Context()); r.Err != nil || len(r.Candidates) != 0 {
		t.Fatalf("run under a 48h threshold after 30h: %+v, want no candidate", r)
	}
	fail.Store(true)
	threshold.Store(int64(time.Hour))
	if r := h.RunOnce(t.Context()); r.Err == nil || len(r.Candidates) != 0 {
		t.Fatalf("run with a failing threshold source: %+v, want an error and no scan", r)
	}
	fail.Store(false)
	r := h.RunOnce(t.Context())
	if r.Err != nil || r.Deactivated != 1 || r.Candidates[0] != idle.ID {
		t.Fatalf("run under a 1h threshold after 30h: %+v, want %s deactivated", r, idle.ID)
	}
}
