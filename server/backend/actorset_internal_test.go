package backend

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestActorSetKeepsEachKeyOnce: the set holds each key once, as a slice
// while small and as a map past that, and finds exactly what it holds.
func TestActorSetKeepsEachKeyOnce(t *testing.T) {
	var s actorSet
	require.False(t, s.has("a0"))
	for i := range 3 * smallActorSet {
		k := fmt.Sprintf("a%d", i)
		s.add(k)
		s.add(k)
		require.Equal(t, i+1, s.len())
		for j := range 3 * smallActorSet {
			require.Equal(t, j <= i, s.has(fmt.Sprintf("a%d", j)), "a%d after adding a%d", j, i)
		}
	}
	require.NotNil(t, s.large, "moved to a map")
}
