package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// appendBatches appends n changes to the document in batches of size, the
// actors taking turns, and returns them.
func appendBatches(t *testing.T, db *memory.DB, docID string, n, size int, actors []string) []*database.Change {
	t.Helper()
	ctx := context.Background()
	var all []*database.Change
	clientSeqs := map[string]uint32{}
	for len(all) < n {
		actor := actors[len(all)/size%len(actors)]
		var b []*database.Change
		for range min(size, n-len(all)) {
			seq := int64(len(all) + len(b) + 1)
			clientSeqs[actor]++
			c := change(seq, actor, clientSeqs[actor])
			c.Body.Message = fmt.Sprintf("change %d", seq)
			if seq%3 == 0 {
				c.Body.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_PUT,
					Presence: &api.Presence{Data: map[string]string{"cursor": fmt.Sprint(seq)}}}
			}
			b = append(b, c)
		}
		require.NoError(t, db.AppendChanges(ctx, docID, 0, b))
		all = append(all, b...)
	}
	return all
}

// TestOldChangesReadBackWhole checks the reads of changes the database no
// longer keeps as they were stored: those of a long log, and those of a
// document that other documents' writes pushed out of the recent ones.
func TestOldChangesReadBackWhole(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	a, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "a")
	require.NoError(t, err)
	b, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, "b")
	require.NoError(t, err)
	alice, bob := "aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb"
	want := appendBatches(t, db, a.ID, 1000, 7, []string{alice, bob})
	check := func(from, to int64) {
		t.Helper()
		got, err := db.FindChanges(ctx, a.ID, from, to)
		require.NoError(t, err)
		require.Len(t, got, int(to-from+1))
		for i, c := range got {
			w := want[from-1+int64(i)]
			require.Equal(t, w.ServerSeq, c.ServerSeq)
			require.Equal(t, w.ActorID, c.ActorID)
			require.Equal(t, w.ClientSeq, c.ClientSeq)
			require.True(t, proto.Equal(w.Body, c.Body), "change %d: %v, want %v", c.ServerSeq, c.Body, w.Body)
		}
	}
	check(1, 1000) // the first ones decoded, the newest as stored
	check(300, 310)
	// Other documents' writes push a's recent changes out.
	for i := range 20 {
		other, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprint("other-", i))
		require.NoError(t, err)
		appendBatches(t, db, other.ID, 1000, 100, []string{bob})
	}
	wantB := appendBatches(t, db, b.ID, 20_000, 100, []string{alice})
	gotB, err := db.FindChanges(ctx, b.ID, 1, 20_000)
	require.NoError(t, err)
	require.Len(t, gotB, len(wantB))
	for i := range wantB {
		require.True(t, proto.Equal(wantB[i].Body, gotB[i].Body), "change %d of b", i+1)
	}
	check(1, 1000)
	check(999, 1000)
	lastOf := func(actor string, after int64) uint32 {
		var last uint32
		for _, c := range want[after:] {
			if c.ActorID == actor {
				last = max(last, c.ClientSeq)
			}
		}
		return last
	}
	for _, c := range []struct {
		actor string
		after int64
	}{{alice, 0}, {bob, 0}, {alice, 999}, {bob, 999}, {alice, 990}, {bob, 990}, {bob, 500}} {
		got, err := db.LastClientSeq(ctx, a.ID, c.actor, c.after)
		require.NoError(t, err)
		require.Equal(t, lastOf(c.actor, c.after), got, "LastClientSeq(%s, %d)", c.actor[:1], c.after)
	}
}

// TestReadsWhileOtherDocumentsWrite has writers on many documents push each
// other's changes out of the recent ones while each reads its own log back
// (run with -race).
func TestReadsWhileOtherDocumentsWrite(t *testing.T) {
	ctx := context.Background()
	db := memory.New()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprint("doc-", w))
			if !assert.NoError(t, err) {
				return
			}
			actor := fmt.Sprintf("%024x", w)
			for seq := int64(1); seq <= 1500; seq++ {
				c := change(seq, actor, uint32(seq))
				if !assert.NoError(t, db.AppendChanges(ctx, d.ID, 0, []*database.Change{c})) {
					return
				}
				if seq%250 != 0 {
					continue
				}
				got, err := db.FindChanges(ctx, d.ID, 1, seq)
				if !assert.NoError(t, err) || !assert.Len(t, got, int(seq)) {
					return
				}
				for i, c := range got {
					if !assert.Equal(t, int64(i+1), c.Body.GetId().GetServerSeq()) || !assert.Equal(t, actor, c.ActorID) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
