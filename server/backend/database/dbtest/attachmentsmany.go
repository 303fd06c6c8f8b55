package dbtest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testManyClientsOfOneDocument checks the attachments of a document that
// many clients attached, some of them more than once and some gone: each
// client's latest attachment is found whole, and the lists hold each client
// once.
func testManyClientsOfOneDocument(t *testing.T, newDB NewDB) {
	ctx, db := testCtx(t), newDB(t)
	d := newDoc(t, ctx, db)
	const clients = 40
	ids := make([]string, clients)
	want := make([]*database.Attachment, clients)
	for i := range ids {
		ids[i] = unknownID()
		want[i] = &database.Attachment{
			ClientID: ids[i], DocID: d.ID, Status: database.Attached,
			ServerSeq: int64(i), ClientSeq: uint32(i), AttachedAt: int64(i), DocEpoch: int64(i % 3),
			VersionVector: map[string]int64{fmt.Sprintf("actor%d", i): int64(i), "shared": -int64(i)},
		}
		require.NoError(t, db.UpdateAttachment(ctx, want[i], 0))
	}
	// Every third client leaves, every fifth reports progress.
	for i := range ids {
		if i%3 == 0 {
			want[i] = &database.Attachment{ClientID: ids[i], DocID: d.ID, Status: database.Detached,
				ServerSeq: 100 + int64(i), AttachedAt: int64(i), DocEpoch: want[i].DocEpoch}
			require.NoError(t, db.UpdateAttachment(ctx, want[i], 0))
		} else if i%5 == 0 {
			want[i].ServerSeq, want[i].ClientSeq = 200, 7
			want[i].VersionVector = map[string]int64{"later": 1 << 40}
			require.NoError(t, db.UpdateAttachment(ctx, want[i], 0))
		}
	}
	var attached []string
	for i, id := range ids {
		got := must(db.FindAttachment(ctx, id, d.ID)).get(t)
		assertAttachment(t, got, want[i])
		require.Equal(t, want[i].DocEpoch, got.DocEpoch)
		if want[i].Status == database.Attached {
			attached = append(attached, id)
		}
	}
	var listed []string
	for _, a := range must(db.ListAttachments(ctx, d.ID)).get(t) {
		listed = append(listed, a.ClientID)
	}
	slices.Sort(listed)
	slices.Sort(attached)
	require.Equal(t, attached, listed)
	all := must(db.ListDocumentClients(ctx, d.ID)).get(t)
	slices.Sort(all)
	require.Equal(t, slices.Sorted(slices.Values(ids)), all)
	_, err := db.FindAttachment(ctx, unknownID(), d.ID)
	require.ErrorIs(t, err, database.ErrAttachmentNotFound)
}
