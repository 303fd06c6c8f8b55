package database_test

import (
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// TestClientIDsIncrease checks that IDs rise with a clock that stands still
// (beyond the counter's range), steps back and moves on, and that they start
// with the seconds of their time, as ObjectIDs do.
func TestClientIDsIncrease(t *testing.T) {
	base := time.Unix(1_800_000_000, 500_000_000)
	clock := base
	g := database.NewClientIDs(func() time.Time { return clock })
	prev := ""
	next := func(what string) string {
		t.Helper()
		id := g.Next()
		if len(id) != 24 {
			t.Fatalf("%s: ID %q is not 24 hex characters", what, id)
		}
		if id <= prev {
			t.Fatalf("%s: ID %s not above %s", what, id, prev)
		}
		prev = id
		return id
	}
	first := next("first")
	b, err := hex.DecodeString(first)
	if err != nil {
		t.Fatal(err)
	}
	if secs := binary.BigEndian.Uint32(b[:4]); int64(secs) != base.Unix() {
		t.Fatalf("ID %s starts with second %d, want %d", first, secs, base.Unix())
	}
	for range 70_000 {
		next("same instant")
	}
	clock = base.Add(-time.Hour)
	next("clock stepped back")
	clock = base.Add(time.Hour)
	next("clock moved on")

	// Another generator (another node, or this one after a restart) that
	// starts later hands out greater IDs.
	clock = clock.Add(time.Microsecond)
	later := database.NewClientIDs(func() time.Time { return clock }).Next()
	if later <= prev {
		t.Fatalf("a later generator's ID %s is not above %s", later, prev)
	}
}
