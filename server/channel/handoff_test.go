package channel

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGroupSessionsMoveWithTheirLife: the sessions of a group copied from
// one manager and imported into another keep their IDs, clients and
// remaining life; other groups stay behind; a client that already holds a
// session on the channel at the importer keeps it, and an expired session
// is not imported.
func TestGroupSessionsMoveWithTheirLife(t *testing.T) {
	from := newTestManager(t, Config{})
	to := newTestManager(t, Config{})
	a, _, err := from.Attach("aa", "room", time.Minute, nil)
	require.NoError(t, err)
	_, _, err = from.Attach("bb", "room.1", 0, nil)
	require.NoError(t, err)
	_, _, err = from.Attach("cc", "other", 0, nil)
	require.NoError(t, err)
	// bb attached to room.1 at the importer already (say its heartbeat
	// arrived there first).
	_, _, err = to.Attach("bb", "room.1", 0, nil)
	require.NoError(t, err)

	handed := from.GroupSessions("room")
	require.Len(t, handed, 2)
	handed = append(handed, HandedSession{ID: "0123456789abcdef01234567", Key: "room.2", Client: "dd", Age: 2 * time.Minute, TTL: time.Minute})
	n, err := to.Import(handed)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only aa's session is new and alive")
	require.EqualValues(t, 2, to.Count("room"))
	require.EqualValues(t, 0, to.Count("other"))

	// aa's session is known by its ID: a heartbeat refreshes it, and it
	// expires one TTL after its last refresh, not after the import.
	_, err = to.Refresh("aa", "room", a, 0, nil)
	require.NoError(t, err)
	require.Zero(t, to.Sweep(time.Now().Add(time.Minute/2)))
	require.Equal(t, 2, to.Sweep(time.Now().Add(2*time.Minute)))
}

// TestImportRefusesMalformedSessions: one malformed session refuses the
// whole batch, which adds nothing.
func TestImportRefusesMalformedSessions(t *testing.T) {
	m := newTestManager(t, Config{})
	good := HandedSession{ID: "0123456789abcdef01234567", Key: "room", Client: "aa", TTL: time.Minute}
	for name, bad := range map[string]HandedSession{
		"session ID": {ID: "nope", Key: "room", Client: "bb", TTL: time.Minute},
		"key":        {ID: "0123456789abcdef01234568", Key: "room..x", Client: "bb", TTL: time.Minute},
		"client":     {ID: "0123456789abcdef01234568", Key: "room", TTL: time.Minute},
		"age":        {ID: "0123456789abcdef01234568", Key: "room", Client: "bb", Age: -time.Second, TTL: time.Minute},
		"ttl":        {ID: "0123456789abcdef01234568", Key: "room", Client: "bb"},
	} {
		_, err := m.Import([]HandedSession{good, bad})
		require.Error(t, err, name)
		require.Zero(t, m.Count("room"), name)
	}
}

// TestImportSkipsSessionsDetachedHere: a session whose detach reached the
// importer before the copy of it (unknown there then, or brought there by a
// heartbeat first) is not brought back by the copy; after detachedMemory,
// or past maxDetached later detaches, the importer has forgotten it.
func TestImportSkipsSessionsDetachedHere(t *testing.T) {
	from := newTestManager(t, Config{})
	to := newTestManager(t, Config{})
	early, _, err := from.Attach("aa", "room", 0, nil)
	require.NoError(t, err)
	beaten, _, err := from.Attach("bb", "room.1", 0, nil)
	require.NoError(t, err)
	_, _, err = from.Attach("cc", "room.2", 0, nil)
	require.NoError(t, err)
	handed := from.GroupSessions("room")

	n, err := to.Detach("aa", "room", early, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = to.Refresh("bb", "room.1", beaten, 0, nil)
	require.NoError(t, err)
	_, err = to.Detach("bb", "room.1", beaten, nil)
	require.NoError(t, err)
	added, err := to.Import(handed)
	require.NoError(t, err)
	require.Equal(t, 1, added, "only cc's session")
	require.EqualValues(t, 1, to.Count("room"))
	require.EqualValues(t, 0, to.OwnCount("room"))

	// Forgotten after detachedMemory: a copy then is taken as it comes.
	later := newTestManager(t, Config{})
	_, err = later.Detach("aa", "room", early, nil)
	require.NoError(t, err)
	later.Sweep(time.Now().Add(detachedMemory + time.Second))
	added, err = later.Import(handed[:1])
	require.NoError(t, err)
	require.Equal(t, 1, added)

	// And past maxDetached newer detaches.
	many := newTestManager(t, Config{})
	_, err = many.Detach("aa", "room", early, nil)
	require.NoError(t, err)
	for i := range maxDetached {
		_, err = many.Detach("zz", "room", fmt.Sprintf("%024x", i), nil)
		require.NoError(t, err)
	}
	require.Len(t, many.detached, maxDetached)
	added, err = many.Import([]HandedSession{{ID: early, Key: "room", Client: "aa", TTL: time.Minute}})
	require.NoError(t, err)
	require.Equal(t, 1, added)
}

// TestChangesRefusedOnceNotHeld: with the held check failing, Attach,
// Detach, Refresh and Watch refuse with ErrMoved and change nothing, so a
// draining owner's copy of the group stays the whole truth.
func TestChangesRefusedOnceNotHeld(t *testing.T) {
	m := newTestManager(t, Config{})
	id, _, err := m.Attach("aa", "room", 0, nil)
	require.NoError(t, err)
	gone := func() bool { return false }
	_, _, err = m.Attach("bb", "room", 0, gone)
	require.ErrorIs(t, err, ErrMoved)
	_, err = m.Detach("aa", "room", id, gone)
	require.ErrorIs(t, err, ErrMoved)
	_, err = m.Refresh("cc", "room", "0123456789abcdef01234567", 0, gone)
	require.ErrorIs(t, err, ErrMoved)
	_, err = m.Watch("dd", "room", gone)
	require.ErrorIs(t, err, ErrMoved)
	require.EqualValues(t, 1, m.Count("room"))
	require.Len(t, m.GroupSessions("room"), 1)
	held := func() bool { return true }
	_, err = m.Detach("aa", "room", id, held)
	require.NoError(t, err)
	require.Zero(t, m.Count("room"))
}
