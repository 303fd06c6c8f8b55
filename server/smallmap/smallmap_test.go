package smallmap

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMapFollowsAPlainMap: through adds, deletes (some while iterating) and
// updates through the pointers it hands out, a Map holds what a Go map
// does, as a slice while small and as a map past that.
func TestMapFollowsAPlainMap(t *testing.T) {
	var m Map[int]
	want := map[string]int{}
	check := func(step int) {
		t.Helper()
		require.Equal(t, len(want), m.Len(), "step %d", step)
		got := map[string]int{}
		for k, v := range m.All() {
			got[k] = *v
		}
		require.Equal(t, want, got, "step %d", step)
		for k, v := range want {
			require.Equal(t, v, *m.Get(k), "step %d: %s", step, k)
		}
		require.Nil(t, m.Get("absent"))
	}
	for i := range 3 * Small {
		k := fmt.Sprintf("k%d", i)
		*m.Add(k, i) += 1000
		want[k] = i + 1000
		if i%4 == 0 {
			m.Delete(fmt.Sprintf("k%d", i/2))
			delete(want, fmt.Sprintf("k%d", i/2))
		}
		check(i)
		if i%8 != 0 {
			continue
		}
		// Deleting the key given while iterating: every third.
		n := 0
		for k := range m.All() {
			if n++; n%3 == 0 {
				m.Delete(k)
				delete(want, k)
			}
		}
		check(i)
	}
	require.NotNil(t, m.large, "moved to a map")
}

// TestSetKeepsEachKeyOnce: the set holds each key once, finds exactly what
// it holds and lists it, through adds and removes.
func TestSetKeepsEachKeyOnce(t *testing.T) {
	var s Set
	require.False(t, s.Has("k0"))
	want := map[string]bool{}
	for i := range 3 * Small {
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
		for j := range 3 * Small {
			k := fmt.Sprintf("k%d", j)
			require.Equal(t, want[k], s.Has(k), "%s after step %d", k, i)
			if want[k] {
				keys = append(keys, k)
			}
		}
		require.ElementsMatch(t, keys, s.AppendTo(nil))
	}
	require.NotNil(t, s.m.large, "moved to a map")
}
