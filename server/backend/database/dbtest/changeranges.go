package dbtest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testChangeRanges checks that every range of a log built by batches of
// different sizes, from several actors, returns exactly the changes stored
// at those server_seq values, bodies included: a range may start and end
// inside a batch, and a change whose body is empty is a change like others.
func testChangeRanges(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	d := newDoc(t, ctx, db)
	alice, bob := unknownID(), unknownID()
	var want []*database.Change
	for i, b := range [][]*database.Change{
		batch(alice, 1, 1, 1, "a"),
		batch(bob, 2, 1, 4, "b"),
		{{ServerSeq: 6, ActorID: alice, ClientSeq: 2, Body: &api.Change{}}},
		batch(alice, 7, 3, 3, "a"),
	} {
		require.NoError(t, db.AppendChanges(ctx, d.ID, 0, b), "batch %d", i)
		want = append(want, b...)
	}
	for from := int64(1); from <= 9; from++ {
		for to := from; to <= 9; to++ {
			got := must(db.FindChanges(ctx, d.ID, from, to)).get(t)
			require.Len(t, got, int(to-from+1), "FindChanges(%d, %d)", from, to)
			for i, c := range got {
				w := want[from-1+int64(i)]
				require.Equal(t, w.ServerSeq, c.ServerSeq)
				require.Equal(t, w.ActorID, c.ActorID)
				require.Equal(t, w.ClientSeq, c.ClientSeq)
				require.True(t, proto.Equal(w.Body, c.Body), "FindChanges(%d, %d): change %d body %v, want %v",
					from, to, c.ServerSeq, c.Body, w.Body)
			}
		}
	}
	require.Equal(t, uint32(5), must(db.LastClientSeq(ctx, d.ID, alice, 0)).get(t))
	require.Equal(t, uint32(4), must(db.LastClientSeq(ctx, d.ID, bob, 0)).get(t))
	require.Equal(t, uint32(0), must(db.LastClientSeq(ctx, d.ID, bob, 5)).get(t))
	require.Equal(t, uint32(0), must(db.LastClientSeq(ctx, d.ID, alice, 9)).get(t))
}
