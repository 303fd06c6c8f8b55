package dbtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testStrikes checks the attempt counts of the admin throttles, with two
// handles acting as two nodes: a strike counted by one is seen by the
// other.
func testStrikes(t *testing.T, newPair NewPair) {
	db, other := newPair(t)
	ctx := testCtx(t)
	key, key2 := "u:"+unknownID(), "a:"+unknownID()
	at := time.Now().UTC().Truncate(time.Millisecond)
	window := time.Minute

	n, last, err := db.FindStrikes(ctx, key)
	require.NoError(t, err)
	require.Zero(t, n)
	require.True(t, last.IsZero())

	for i := 1; i <= 3; i++ {
		h := db
		if i%2 == 0 {
			h = other
		}
		n, err := h.AddStrike(ctx, key, at.Add(time.Duration(i)*time.Second), window)
		require.NoError(t, err)
		require.Equal(t, i, n, "both handles count the same key")
	}
	n, last, err = other.FindStrikes(ctx, key)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.True(t, last.Equal(at.Add(3*time.Second)), "%v", last)

	// A strike a window after the last starts a new count.
	n, err = db.AddStrike(ctx, key, at.Add(3*time.Second+window), window)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Clearing forgets the key, and only it.
	_, err = db.AddStrike(ctx, key2, at, window)
	require.NoError(t, err)
	require.NoError(t, other.ClearStrikes(ctx, key))
	require.NoError(t, other.ClearStrikes(ctx, "u:"+unknownID()), "an unknown key is no error")
	n, _, err = db.FindStrikes(ctx, key)
	require.NoError(t, err)
	require.Zero(t, n)
	n, _, err = db.FindStrikes(ctx, key2)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Stale keys go.
	removed, err := other.RemoveStrikesBefore(ctx, at.Add(time.Second))
	require.NoError(t, err)
	require.GreaterOrEqual(t, removed, 1)
	n, _, err = db.FindStrikes(ctx, key2)
	require.NoError(t, err)
	require.Zero(t, n)
}
