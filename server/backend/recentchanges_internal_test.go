package backend

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

func rowsFrom(from, n int64) []*database.Change {
	out := make([]*database.Change, n)
	for i := range out {
		out[i] = &database.Change{ServerSeq: from + int64(i)}
	}
	return out
}

// TestChangeWindowCoversOnlyWhatItHolds: the window answers a range only
// when it holds all of it, keeps between recentWindow and twice as many of
// the newest changes, and starts again at a gap.
func TestChangeWindowCoversOnlyWhatItHolds(t *testing.T) {
	var w changeWindow
	_, ok := w.span(1, 1)
	require.False(t, ok, "empty")

	w.appended(rowsFrom(1, 5))
	got, ok := w.span(3, 5)
	require.True(t, ok)
	require.Equal(t, []int64{3, 4, 5}, seqs(got))
	_, ok = w.span(4, 6)
	require.False(t, ok, "past the newest")

	w.appended(rowsFrom(6, 2*recentWindow))
	_, ok = w.span(1, 2)
	require.False(t, ok, "trimmed")
	last := int64(5 + 2*recentWindow)
	got, ok = w.span(last-recentWindow+1, last)
	require.True(t, ok, "keeps at least recentWindow")
	require.Len(t, got, recentWindow)

	w.appended(rowsFrom(last+2, 1))
	_, ok = w.span(last, last+2)
	require.False(t, ok, "a gap starts the window again")
	got, ok = w.span(last+2, last+2)
	require.True(t, ok)
	require.Equal(t, []int64{last + 2}, seqs(got))

	w.reset()
	_, ok = w.span(last+2, last+2)
	require.False(t, ok)
}

func seqs(cs []*database.Change) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ServerSeq
	}
	return out
}
