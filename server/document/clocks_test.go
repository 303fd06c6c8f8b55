package document

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// TestPushedClocksAreBounded: a pushed change whose lamport, vector or any
// ticket is past MaxLamport is refused and changes nothing; the next honest
// change applies.
func TestPushedClocksAreBounded(t *testing.T) {
	huge := int64(math.MaxInt64)
	setAt := func(lamport int64, key string, value int32) *api.Change {
		at := tk(lamport, 1, actorA)
		return change(actorA, 2, lamport, setOpPB(rootTicket(), key, intValue(at, value), at))
	}
	withVector := func(c *api.Change, lamport int64) *api.Change {
		c.Id.VersionVector = VersionVectorToPB(crdt.VersionVector{actorA: lamport})
		return c
	}
	cases := map[string]*api.Change{
		"change lamport":      setAt(huge, "k", 1),
		"just past the bound": setAt(MaxLamport+1, "k", 1),
		"negative lamport":    setAt(-1, "k", 1),
		"vector entry":        withVector(setAt(2, "k", 1), huge),
		"ticket of an operation": change(actorA, 2, 2,
			setOpPB(rootTicket(), "k", intValue(tk(huge, 1, actorA), 1), tk(2, 1, actorA))),
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := baseDoc(t)
			before := d.JSON()
			err := d.ApplyPushed([]*api.Change{c})
			require.True(t, errors.Is(err, ErrInvalidOperation), "refused with ErrInvalidOperation, got %v", err)
			require.Equal(t, before, d.JSON(), "nothing changed")
			require.NoError(t, d.ApplyPushed([]*api.Change{setAt(2, "k", 2)}))
			require.Equal(t, `{"c":1,"d":0,"k":2,"l":[7],"o":{},"s":"str"}`, d.JSON())
		})
	}
	t.Run("at the bound", func(t *testing.T) {
		d := baseDoc(t)
		require.NoError(t, d.ApplyPushed([]*api.Change{setAt(MaxLamport, "k", 1)}))
	})
}

// TestOldDataPastTheBoundStaysEditable: a document whose stored history
// already carries a clock past MaxLamport (written before the bound) is
// replayed, and its clients' next changes, which tick past that clock,
// still apply; a jump far beyond it does not.
func TestOldDataPastTheBoundStaysEditable(t *testing.T) {
	old := int64(1) << 60
	d := New()
	at := tk(old, 1, actorA)
	require.NoError(t, d.ApplyChanges([]*api.Change{change(actorA, 1, old, setOpPB(rootTicket(), "k", intValue(at, 1), at))}))
	next := tk(old+2, 1, actorB)
	require.NoError(t, d.ApplyPushed([]*api.Change{change(actorB, 1, old+2, setOpPB(rootTicket(), "j", intValue(next, 2), next))}))
	far := tk(old+3*ClockStep, 1, actorB)
	err := d.ApplyPushed([]*api.Change{change(actorB, 2, old+3*ClockStep, setOpPB(rootTicket(), "j", intValue(far, 3), far))})
	require.ErrorIs(t, err, ErrInvalidOperation)
	require.Equal(t, `{"j":2,"k":1}`, d.JSON())
}

// BenchmarkCheckClocks measures the clock bound on a change of one Set, the
// cost it adds to every pushed change.
func BenchmarkCheckClocks(b *testing.B) {
	at := tk(5, 1, actorA)
	c := change(actorA, 2, 5, setOpPB(rootTicket(), "k", intValue(at, 1), at))
	for b.Loop() {
		if err := checkClocks(c, MaxLamport); err != nil {
			b.Fatal(err)
		}
	}
}
