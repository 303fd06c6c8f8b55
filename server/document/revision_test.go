package document

import (
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// TestRestoreChange restores the content of every recorded scenario onto
// an earlier state of the same document, an empty one and the state itself:
// each ends with the revision's content, as a replica reading the
// document's snapshot holds it (an Int counter travels in 32 bits).
func TestRestoreChange(t *testing.T) {
	for _, g := range loadGoldens(t) {
		if g.Name == "dedup" {
			// A Set carries a counter's value, not a dedup counter's
			// registers: one at the top of the root restarts from zero, in
			// the SDK's encoding as in upstream's restore.
			continue
		}
		t.Run(g.Name, func(t *testing.T) {
			changes := g.changes(t)
			live := New()
			require.NoError(t, live.ApplyChanges(changes))
			snap, err := live.Snapshot()
			require.NoError(t, err)
			full, err := FromSnapshot(snap)
			require.NoError(t, err)
			content, yson, err := live.Revision()
			require.NoError(t, err)
			assert.NotEmpty(t, yson)

			for _, at := range []int{0, len(changes) / 2, len(changes)} {
				d := New()
				require.NoError(t, d.ApplyChanges(changes[:at]))
				restore, err := d.RestoreChange(content)
				require.NoError(t, err)
				require.NoError(t, d.ApplyChanges([]*api.Change{restore}), "restore onto the state after %d changes", at)
				assert.Equal(t, full.JSON(), d.JSON(), "restored onto the state after %d changes", at)
				_, again, err := d.Revision()
				require.NoError(t, err)
				_, want, err := full.Revision()
				require.NoError(t, err)
				assert.Equal(t, want, again, "the restored document's YSON")
			}
		})
	}
}

// TestRevisionYSON checks the YSON form of each kind of value against
// upstream's.
func TestRevisionYSON(t *testing.T) {
	d := New()
	require.NoError(t, d.ApplyChanges([]*api.Change{change(actorA, 1, 1,
		setOpPB(rootTicket(), "k1", stringValue(tk(1, 1, actorA), "v1"), tk(1, 1, actorA)),
		setOpPB(rootTicket(), "n", intValue(tk(1, 2, actorA), 3), tk(1, 2, actorA)),
		setOpPB(rootTicket(), "d", doubleValue(tk(1, 3, actorA), 1.5), tk(1, 3, actorA)),
		setOpPB(rootTicket(), "o", containerValue(tk(1, 4, actorA), false), tk(1, 4, actorA)),
		setOpPB(rootTicket(), "a", containerValue(tk(1, 5, actorA), true), tk(1, 5, actorA)),
	)}))
	_, yson, err := d.Revision()
	require.NoError(t, err)
	assert.Equal(t, `{"a":[],"d":1.5,"k1":"v1","n":Int(3),"o":{}}`, yson)
}

// TestRestoreChangeFromYSON restores each recorded scenario from its YSON
// alone, as a revision imported from upstream Yorkie (YSON only) is: onto
// an earlier, an empty and the same state, the document reads as the
// revision's YSON again.
func TestRestoreChangeFromYSON(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			changes := g.changes(t)
			live := New()
			require.NoError(t, live.ApplyChanges(changes))
			_, want, err := live.Revision()
			require.NoError(t, err)
			root, err := yson.ParseObject(want)
			if g.Name == "dedup" || g.Name == "primitives" {
				// The YSON parser reads no DedupCounter(...), nor dates past
				// year 9999: such a revision is refused, not restored wrong.
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			for _, at := range []int{0, len(changes) / 2, len(changes)} {
				d := New()
				require.NoError(t, d.ApplyChanges(changes[:at]))
				restore, err := d.RestoreChangeFromYSON(root)
				require.NoError(t, err)
				require.NoError(t, d.ApplyChanges([]*api.Change{restore}), "restore onto the state after %d changes", at)
				_, got, err := d.Revision()
				require.NoError(t, err)
				assert.Equal(t, want, got, "restored onto the state after %d changes", at)
			}
		})
	}
}
