package document

import (
	"testing"

	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// TestCompactChangeRebuildsGoldens compacts every scenario the real SDK
// recorded: the one change rebuilds the same JSON on an empty document, with
// no tombstones, and leaves the document it was made from alone.
//
// Two cannot be carried by a root-level Set, as in the SDK's own encoding of
// a Set value: an integer counter past 32 bits and a HyperLogLog counter
// (its registers). Their compaction is refused, and the document stays.
func TestCompactChangeRebuildsGoldens(t *testing.T) {
	refused := map[string]bool{"counterArithmetic": true, "dedup": true}
	for _, g := range loadGoldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			d := New()
			require.NoError(t, d.ApplyChanges(g.changes(t)))
			before, garbage := d.JSON(), d.GarbageLen()

			c, err := CompactChange(d)
			if refused[g.Name] {
				require.ErrorIs(t, err, ErrCompactionMismatch)
				require.Equal(t, before, d.JSON())
				return
			}
			require.NoError(t, err)
			require.Equal(t, before, d.JSON())
			require.Equal(t, garbage, d.GarbageLen())

			rebuilt := New()
			require.NoError(t, rebuilt.ApplyChanges([]*api.Change{c}))
			require.Equal(t, before, rebuilt.JSON())
			require.Zero(t, rebuilt.GarbageLen())
		})
	}
}

func TestCompactChangeOfEmptyDocument(t *testing.T) {
	c, err := CompactChange(New())
	require.NoError(t, err)
	require.Empty(t, c.GetOperations())
	rebuilt := New()
	require.NoError(t, rebuilt.ApplyChanges([]*api.Change{c}))
	require.Equal(t, New().JSON(), rebuilt.JSON())
}
