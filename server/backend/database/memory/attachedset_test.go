package memory

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAttachedSetKeepsEachIDOnce: the set holds each ID once, as a slice
// while small and as a map past that, and lists what it holds either way.
func TestAttachedSetKeepsEachIDOnce(t *testing.T) {
	var s attachedSet
	want := map[string]bool{}
	for i := range 3 * smallAttachedSet {
		id := fmt.Sprintf("d%d", i)
		s.add(id)
		s.add(id)
		want[id] = true
		require.Equal(t, len(want), s.len())
		if i%3 == 0 {
			s.remove(id)
			s.remove(id)
			delete(want, id)
			require.Equal(t, len(want), s.len())
		}
		var wantIDs []string
		for id := range want {
			wantIDs = append(wantIDs, id)
		}
		require.ElementsMatch(t, wantIDs, s.appendTo(nil))
	}
	require.NotNil(t, s.large, "moved to a map")
}
