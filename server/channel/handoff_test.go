package channel

import (
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
	a, _, err := from.Attach("aa", "room", time.Minute)
	require.NoError(t, err)
	_, _, err = from.Attach("bb", "room.1", 0)
	require.NoError(t, err)
	_, _, err = from.Attach("cc", "other", 0)
	require.NoError(t, err)
	// bb attached to room.1 at the importer already (say its heartbeat
	// arrived there first).
	_, _, err = to.Attach("bb", "room.1", 0)
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
	_, err = to.Refresh("aa", "room", a, 0)
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
