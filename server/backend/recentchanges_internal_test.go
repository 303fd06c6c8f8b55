package backend

import (
	"fmt"
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

// TestWindowsStayWithinTheBudget: past the budget, the windows of the
// documents written to longest ago are emptied first; a document whose lock
// is taken keeps its window and goes to the back; emptying a window gives
// its changes back to the budget.
func TestWindowsStayWithinTheBudget(t *testing.T) {
	b := &Backend{windows: windowBudget{limit: 4}}
	docs := make([]*docState, 3)
	for i := range docs {
		docs[i] = b.newDocState(fmt.Sprint("doc", i))
	}
	write := func(ds *docState, from int64) {
		ds.lock <- struct{}{}
		b.keepRecent(ds, rowsFrom(from, 2))
		ds.unlock()
	}
	write(docs[0], 1)
	write(docs[1], 1)
	require.EqualValues(t, 4, b.windows.held.Load())

	write(docs[2], 1)
	require.Empty(t, docs[0].recent.changes, "written to first, emptied first")
	require.Len(t, docs[1].recent.changes, 2)
	require.Len(t, docs[2].recent.changes, 2)
	require.EqualValues(t, 4, b.windows.held.Load())

	// docs[1] is in use: docs[2] goes instead.
	docs[1].lock <- struct{}{}
	write(docs[0], 3)
	docs[1].unlock()
	require.Len(t, docs[1].recent.changes, 2)
	require.Empty(t, docs[2].recent.changes)
	require.Len(t, docs[0].recent.changes, 2)
	require.EqualValues(t, 4, b.windows.held.Load())

	docs[0].recent.reset()
	require.EqualValues(t, 2, b.windows.held.Load())
}
