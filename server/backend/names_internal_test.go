package backend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocNamesFindsEveryIDOfAName: a name lists every ID remembered under
// it (a removed document's key may start another document), each once, and
// nothing of other names.
func TestDocNamesFindsEveryIDOfAName(t *testing.T) {
	d := newDocNames()
	a := DocName{Project: "p", Key: "k"}
	b := DocName{Project: "q", Key: "k"}
	require.Nil(t, d.ids(a))

	d.add("1", a)
	d.add("2", b)
	d.add("3", a)
	d.add("1", a)
	require.ElementsMatch(t, []string{"1", "3"}, d.ids(a))
	require.Equal(t, []string{"2"}, d.ids(b))
	require.Equal(t, a, d.byID["3"])
}
