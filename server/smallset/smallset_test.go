package smallset

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStringsKeepsEachKeyOnce: the set holds each key once, as a slice
// while small and as a map past that, finds exactly what it holds and lists
// it, through adds and removes.
func TestStringsKeepsEachKeyOnce(t *testing.T) {
	var s Strings
	require.False(t, s.Has("k0"))
	want := map[string]bool{}
	for i := range 3 * small {
		k := fmt.Sprintf("k%d", i)
		s.Add(k)
		s.Add(k)
		want[k] = true
		if i%3 == 0 {
			s.Remove(k)
			s.Remove(k)
			delete(want, k)
		}
		require.Equal(t, len(want), s.Len())
		var keys []string
		for j := range 3 * small {
			k := fmt.Sprintf("k%d", j)
			require.Equal(t, want[k], s.Has(k), "%s after step %d", k, i)
			if want[k] {
				keys = append(keys, k)
			}
		}
		require.ElementsMatch(t, keys, s.AppendTo(nil))
	}
	require.NotNil(t, s.large, "moved to a map")
}
