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

// flakyThresholds is a memory database whose listing of the projects'
// thresholds fails while fail is set.
type flakyThresholds struct {
	*memory.DB
	fail atomic.Bool
}

func (db *flakyThresholds) ClientDeactivateThresholds(ctx context.Context) (map[string]string, error) {
	if db.fail.Load() {
		return nil, errors.New("database down")
	}
	return db.DB.ClientDeactivateThresholds(ctx)
}

// projectClient creates a project (the default one when name is empty) with
// the threshold set (none when empty) and activates a client in it.
func projectClient(t *testing.T, db *memory.DB, name, threshold string) (project, client string) {
	t.Helper()
	ctx := t.Context()
	var p *database.ProjectInfo
	var err error
	if name == "" {
		p, err = db.EnsureDefaultProject(ctx, "owner")
	} else {
		p, err = db.CreateProject(ctx, "owner", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	if threshold != "" {
		if p, err = db.UpdateProject(ctx, "owner", p.ID, &database.ProjectUpdate{ClientDeactivateThreshold: &threshold}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.ActivateClient(ctx, p.ID, name+"-client", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID, c.ID
}

// TestEachClientHasItsProjectsThreshold: under a 2h server threshold,
// project A (1h) loses its silent client first, then the projects without
// a setting (the default one, and one whose stored setting is invalid) at
// 2h, then project B (5h); a client of A that keeps calling stays. A
// project's setting changed between runs applies to the next run, and a run
// that cannot read the settings deactivates nobody.
func TestEachClientHasItsProjectsThreshold(t *testing.T) {
	mem := memory.New()
	db := &flakyThresholds{DB: mem}
	clock := &testclock.Clock{}
	tracker := housekeeping.NewTracker()
	h, err := housekeeping.New(housekeeping.Config{
		Interval:            time.Minute,
		DeactivateThreshold: 2 * time.Hour,
		DB:                  db,
		Tracker:             tracker,
		Deactivate: func(ctx context.Context, c *database.ClientInfo) error {
			_, err := mem.DeactivateClient(ctx, c.ProjectID, c.ID)
			return err
		},
		Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	projectA, silentA := projectClient(t, mem, "a", "1h")
	caller, err := mem.ActivateClient(t.Context(), projectA, "caller", nil)
	if err != nil {
		t.Fatal(err)
	}
	projectB, silentB := projectClient(t, mem, "b", "5h")
	projectDefault, silentDefault := projectClient(t, mem, "", "")
	projectInvalid, silentInvalid := projectClient(t, mem, "invalid", "soon")
	clients := map[string]string{silentA: projectA, silentB: projectB, silentDefault: projectDefault, silentInvalid: projectInvalid}

	// run advances the clock to elapsed since the start (plus the interval
	// the record may lag), keeps the caller active and checks which of the
	// silent clients are deactivated after the run.
	var at time.Duration
	run := func(elapsed time.Duration, wantGone ...string) housekeeping.Report {
		t.Helper()
		clock.Advance(elapsed - at)
		at = elapsed
		tracker.Seen(caller.ID)
		r := h.RunOnce(t.Context())
		if r.Err != nil {
			t.Fatalf("run at %v: %v", elapsed, r.Err)
		}
		gone := map[string]bool{}
		for _, id := range wantGone {
			gone[id] = true
		}
		for id, project := range clients {
			c, err := mem.FindClient(t.Context(), project, id)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]database.ClientStatus{true: database.ClientDeactivated, false: database.ClientActivated}[gone[id]]; c.Status != want {
				t.Fatalf("run at %v: client of project %s is %s, want %s (report %+v)", elapsed, project, c.Status, want, r)
			}
		}
		if c, _ := mem.FindClient(t.Context(), projectA, caller.ID); c.Status != database.ClientActivated {
			t.Fatalf("run at %v: the calling client is %s", elapsed, c.Status)
		}
		return r
	}

	run(time.Hour - time.Minute)
	// T1: past A's threshold only; the others are found past the shortest
	// threshold, spared, and looked at again on later runs.
	if r := run(time.Hour+2*time.Minute, silentA); r.Deactivated != 1 || r.Spared != 3 {
		t.Fatalf("run past 1h = %+v, want A's client deactivated and 3 spared", r)
	}
	// The server's threshold: the projects without a (valid) setting.
	if r := run(2*time.Hour+2*time.Minute, silentA, silentDefault, silentInvalid); r.Deactivated != 2 || r.Spared != 1 {
		t.Fatalf("run past 2h = %+v, want 2 deactivated and B's client spared", r)
	}
	// B's threshold is read again each run: lengthened, it spares its client
	// past 5h; a run that cannot read it deactivates nobody.
	longer := "6h"
	if _, err := mem.UpdateProject(t.Context(), "owner", projectB, &database.ProjectUpdate{ClientDeactivateThreshold: &longer}); err != nil {
		t.Fatal(err)
	}
	run(5*time.Hour+2*time.Minute, silentA, silentDefault, silentInvalid)
	db.fail.Store(true)
	clock.Advance(2 * time.Hour)
	at += 2 * time.Hour
	if r := h.RunOnce(t.Context()); r.Err == nil || len(r.Candidates) != 0 {
		t.Fatalf("run without the thresholds = %+v, want an error and no scan", r)
	}
	db.fail.Store(false)
	// T2: past B's threshold too.
	if r := run(at, silentA, silentDefault, silentInvalid, silentB); r.Deactivated != 1 {
		t.Fatalf("run past 6h = %+v, want B's client deactivated", r)
	}
}

// TestSparedClientsKeepTheCursorMoving: with a batch of one, clients that
// their project's longer threshold spares do not stop the scan from
// reaching the clients after them, and are deactivated once their own
// threshold passed.
func TestSparedClientsKeepTheCursorMoving(t *testing.T) {
	db := memory.New()
	clock := &testclock.Clock{}
	h, err := housekeeping.New(housekeeping.Config{
		Interval:            time.Minute,
		DeactivateThreshold: time.Hour,
		CandidatesLimit:     1,
		DB:                  db,
		Tracker:             housekeeping.NewTracker(),
		Deactivate: func(ctx context.Context, c *database.ClientInfo) error {
			_, err := db.DeactivateClient(ctx, c.ProjectID, c.ID)
			return err
		},
		Now: clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	// IDs rise in activation order: the long project's clients come first.
	_, long1 := projectClient(t, db, "long-1", "10h")
	_, long2 := projectClient(t, db, "long-2", "10h")
	_, short := projectClient(t, db, "short", "")
	clock.Advance(2 * time.Hour)
	var seen []string
	for range 3 {
		r := h.RunOnce(t.Context())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		seen = append(seen, r.Candidates...)
	}
	if len(seen) != 1 || seen[0] != short {
		t.Fatalf("deactivated %v in three runs of one client each, want only %s", seen, short)
	}
	clock.Advance(9 * time.Hour)
	seen = nil
	for range 3 {
		seen = append(seen, h.RunOnce(t.Context()).Candidates...)
	}
	if len(seen) != 2 || seen[0] != long1 || seen[1] != long2 {
		t.Fatalf("deactivated %v after 11h, want %s and %s", seen, long1, long2)
	}
}
