package dbtest

import (
	"slices"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// ids returns the IDs of clients, in their order.
func ids(cs []*database.ClientInfo) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// testInactiveClients checks what housekeeping relies on: touching records
// activity, and the inactive activated clients are found in ID order, page
// by page.
func testInactiveClients(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	var all []string
	for _, key := range []string{"idle-a", "idle-b", "idle-c", "idle-d"} {
		all = append(all, must(db.ActivateClient(ctx, database.DefaultProjectID, key, nil)).get(t).ID)
	}
	slices.Sort(all)
	// Times are whole milliseconds, which every implementation keeps exactly.
	future := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)

	found := must(db.FindInactiveClients(ctx, future, "", 10)).get(t)
	if got := ids(found); !slices.Equal(got, all) {
		t.Fatalf("FindInactiveClients(an hour ahead) = %v, want every client in ID order %v", got, all)
	}
	if got := must(db.FindInactiveClients(ctx, time.Now().Add(-time.Hour), "", 10)).get(t); len(got) != 0 {
		t.Fatalf("FindInactiveClients(an hour ago) = %v, want none", ids(got))
	}

	touched, deactivated := all[1], all[2]
	must(db.DeactivateClient(ctx, database.DefaultProjectID, deactivated)).get(t)
	if err := db.TouchClients(ctx, []string{touched, deactivated, unknownID(), "not-an-id"}, future); err != nil {
		t.Fatalf("TouchClients: %v", err)
	}
	if got := must(db.FindClient(ctx, database.DefaultProjectID, touched)).get(t).UpdatedAt; !got.Equal(future) {
		t.Fatalf("UpdatedAt after TouchClients = %v, want %v", got, future)
	}
	// A touch never moves activity back.
	if err := db.TouchClients(ctx, []string{touched}, future.Add(-time.Minute)); err != nil {
		t.Fatalf("TouchClients earlier: %v", err)
	}
	if got := must(db.FindClient(ctx, database.DefaultProjectID, touched)).get(t).UpdatedAt; !got.Equal(future) {
		t.Fatalf("UpdatedAt after an earlier touch = %v, want %v kept", got, future)
	}
	if got := must(db.FindClient(ctx, database.DefaultProjectID, deactivated)).get(t); got.Status != database.ClientDeactivated || got.UpdatedAt.Equal(future) {
		t.Fatalf("deactivated client after TouchClients = %+v, want it untouched", got)
	}

	idle := []string{all[0], all[3]}
	if got := ids(must(db.FindInactiveClients(ctx, future, "", 10)).get(t)); !slices.Equal(got, idle) {
		t.Fatalf("FindInactiveClients after touch and deactivation = %v, want %v", got, idle)
	}
	page := must(db.FindInactiveClients(ctx, future, "", 1)).get(t)
	if got := ids(page); !slices.Equal(got, idle[:1]) {
		t.Fatalf("first page of 1 = %v, want %v", got, idle[:1])
	}
	page = must(db.FindInactiveClients(ctx, future, page[0].ID, 1)).get(t)
	if got := ids(page); !slices.Equal(got, idle[1:]) {
		t.Fatalf("second page of 1 = %v, want %v", got, idle[1:])
	}
	if got := must(db.FindInactiveClients(ctx, future, page[0].ID, 1)).get(t); len(got) != 0 {
		t.Fatalf("page after the last = %v, want none", ids(got))
	}
	if got := must(db.FindInactiveClients(ctx, future, "", 0)).get(t); len(got) != 0 {
		t.Fatalf("limit 0 = %v, want none", ids(got))
	}
}
