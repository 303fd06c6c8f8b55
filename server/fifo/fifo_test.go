package fifo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueKeepsOrderAndBoundsItsArray: values come out in the order they
// went in, through pushes and pops interleaved, and the array stays near
// the number queued rather than the number ever pushed.
func TestQueueKeepsOrderAndBoundsItsArray(t *testing.T) {
	var q Queue[int]
	_, ok := q.Pop()
	require.False(t, ok)
	_, ok = q.Peek()
	require.False(t, ok)
	next, want := 0, 0
	for round := range 1000 {
		for range round%3 + 1 {
			q.Push(next)
			next++
		}
		for range round % 3 {
			first, ok := q.Peek()
			require.True(t, ok)
			require.Equal(t, want, first, "Peek shows what Pop takes")
			v, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, want, v)
			want++
		}
		require.Equal(t, next-want, q.Len())
		require.LessOrEqual(t, len(q.items), 2*q.Len()+2, "the array holds what is queued, not all ever pushed")
	}
}
