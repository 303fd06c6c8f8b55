package backend_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// BenchmarkRestoreRevision restores a revision of a document of 10,000
// keys (on the memory database): finding the revision, building the change
// that replaces the root, applying and storing it. It reports the size of
// the restore change.
func BenchmarkRestoreRevision(b *testing.B) {
	ctx := context.Background()
	be, db := newBackend(b, nil)
	w := newWriter(b, be, "w")
	w.attach("doc")
	const n = 10000
	w.mustPush(w.change(func(at *api.TimeTicket) []*api.Operation {
		ops := make([]*api.Operation, n)
		for i := range ops {
			t := &api.TimeTicket{Lamport: at.Lamport, Delimiter: uint32(i + 1), ActorId: at.ActorId}
			ops[i] = setOp(rootTicket(), fmt.Sprintf("key-%05d", i), fmt.Sprintf("value %d", i), t)
		}
		return ops
	}))
	rev, err := be.CreateRevision(ctx, defaultProject, 0, "", w.docID, "10k", "")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := be.RestoreRevision(ctx, defaultProject, 0, "", w.docID, rev.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	log := storedLog(b, db, w.docID)
	last := log[len(log)-1].Body
	b.ReportMetric(float64(len(last.GetOperations())), "ops/restore")
	b.ReportMetric(float64(proto.Size(last)), "bytes/restore")
}
