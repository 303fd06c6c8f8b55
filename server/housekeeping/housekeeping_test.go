package housekeeping_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
)

// fixture is a housekeeper on a memory database whose Deactivate marks the
// client deactivated, failing for the clients in failing.
type fixture struct {
	db      *memory.DB
	clock   *testclock.Clock
	tracker *housekeeping.Tracker
	h       *housekeeping.Housekeeper

	mu      sync.Mutex
	failing map[string]bool
	calls   []string
}

func newFixture(t *testing.T, limit int, role housekeeping.Role) *fixture {
	t.Helper()
	f := &fixture{db: memory.New(), clock: &testclock.Clock{}, tracker: housekeeping.NewTracker(), failing: map[string]bool{}}
	h, err := housekeeping.New(housekeeping.Config{
		Interval:            time.Hour,
		DeactivateThreshold: time.Minute,
		CandidatesLimit:     limit,
		DB:                  f.db,
		Tracker:             f.tracker,
		Deactivate: func(ctx context.Context, c *database.ClientInfo) error {
			id := c.ID
			f.mu.Lock()
			f.calls = append(f.calls, id)
			fail := f.failing[id]
			f.mu.Unlock()
			if fail {
				return errors.New("owner unreachable")
			}
			_, err := f.db.DeactivateClient(ctx, database.DefaultProjectID, id)
			return err
		},
		Role: role,
		Now:  f.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

func (f *fixture) activate(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		c, err := f.db.ActivateClient(t.Context(), database.DefaultProjectID, fmt.Sprintf("%s-%d", t.Name(), i), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestBatchesGoOnWhereTheLastStopped deactivates five idle clients two at a
// time: each run takes the next batch, and a client whose deactivation
// failed is tried again once the scan has wrapped around.
func TestBatchesGoOnWhereTheLastStopped(t *testing.T) {
	f := newFixture(t, 2, nil)
	ids := f.activate(t, 5)
	f.failing[ids[1]] = true
	f.clock.Advance(2 * time.Hour)

	var got [][]string
	for range 3 {
		r := f.h.RunOnce(t.Context())
		got = append(got, r.Candidates)
	}
	want := [][]string{ids[0:2], ids[2:4], ids[4:5]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batches = %v, want %v", got, want)
	}
	f.failing[ids[1]] = false
	r := f.h.RunOnce(t.Context())
	if r.Err != nil || r.Deactivated != 1 || !slices.Equal(r.Candidates, ids[1:2]) {
		t.Fatalf("run after the wrap = %+v, want the failed client %s deactivated", r, ids[1])
	}
	for _, id := range ids {
		if c, _ := f.db.FindClient(t.Context(), database.DefaultProjectID, id); c.Status != database.ClientDeactivated {
			t.Fatalf("client %s is %s after the runs", id, c.Status)
		}
	}
}

// TestActivityKeepsClients records calls and an open stream in the tracker:
// the clients they name are not deactivated, however long the pause.
func TestActivityKeepsClients(t *testing.T) {
	f := newFixture(t, 10, nil)
	ids := f.activate(t, 3)
	caller, watcher, silent := ids[0], ids[1], ids[2]
	closeStream := f.tracker.Watching(watcher)
	for range 3 {
		f.clock.Advance(2 * time.Hour)
		f.tracker.Seen(caller)
		r := f.h.RunOnce(t.Context())
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	f.mu.Lock()
	calls := slices.Clone(f.calls)
	f.mu.Unlock()
	if !slices.Equal(calls, []string{silent}) {
		t.Fatalf("deactivated %v, want only the silent client %s", calls, silent)
	}
	closeStream()
	closeStream() // harmless
	f.clock.Advance(2 * time.Hour)
	f.tracker.Seen(caller)
	if r := f.h.RunOnce(t.Context()); len(r.Candidates) != 0 {
		t.Fatalf("run right after the stream closed = %+v; the end of a stream is activity", r)
	}
	f.clock.Advance(2 * time.Hour)
	f.tracker.Seen(caller)
	if r := f.h.RunOnce(t.Context()); !slices.Equal(r.Candidates, []string{watcher}) {
		t.Fatalf("run after the pause = %+v, want the former watcher %s", r, watcher)
	}
}

// role is a Role that leads when told to.
type role struct {
	lead     atomic.Bool
	resigned atomic.Int32
}

func (r *role) Lead(context.Context, string) (bool, error) { return r.lead.Load(), nil }
func (r *role) Resign(context.Context, string) error       { r.resigned.Add(1); return nil }

// TestOnlyTheLeaderScans checks that a node without the role records
// activity but deactivates nobody, and that Stop gives the role up.
func TestOnlyTheLeaderScans(t *testing.T) {
	ro := &role{}
	f := newFixture(t, 10, ro)
	ids := f.activate(t, 2)
	f.tracker.Seen(ids[0])
	f.clock.Advance(2 * time.Hour)
	if r := f.h.RunOnce(t.Context()); r.Led || r.Touched != 1 || len(r.Candidates) != 0 {
		t.Fatalf("run without the role = %+v; want activity recorded, no scan", r)
	}
	ro.lead.Store(true)
	if r := f.h.RunOnce(t.Context()); !r.Led || !slices.Equal(r.Candidates, ids[1:]) {
		t.Fatalf("run with the role = %+v; want %s found", r, ids[1])
	}
	f.h.Start()
	if err := f.h.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ro.resigned.Load() != 1 {
		t.Fatalf("Stop resigned %d times, want once", ro.resigned.Load())
	}
}

// BenchmarkTrackerSeen measures what recording a call costs the hot path
// (every RPC that names a client), with 1,000 clients calling in parallel.
func BenchmarkTrackerSeen(b *testing.B) {
	tr := housekeeping.NewTracker()
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%024x", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			tr.Seen(ids[i%len(ids)])
			i++
		}
	})
}
