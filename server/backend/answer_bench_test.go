package backend_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// BenchmarkAnswerAfterHugeVector measures the PushPull answer another client
// gets after one client tried to report a 100,000-entry version vector
// (answer-bytes: its encoded size).
func BenchmarkAnswerAfterHugeVector(b *testing.B) {
	ctx := context.Background()
	be, _ := newBackend(b, nil)
	a, c, docID := attachTwo(b, be)
	ka, kc := vvKey(b, a), vvKey(b, c)
	huge := map[string]int64{ka: 1, kc: 1}
	for i := range 100_000 {
		huge[sdksim.VectorKey(fmt.Appendf(nil, "actor%07d", i))] = 1
	}
	attempt := pack(0, 0)
	attempt.VersionVector = &api.VersionVector{Vector: huge}
	_, _ = be.PushPull(ctx, defaultProject, 0, a, docID, attempt, false) // refused, or accepted by an older server

	b.ReportAllocs()
	size := 0
	for b.Loop() {
		p := pack(0, 0)
		p.VersionVector = &api.VersionVector{Vector: map[string]int64{ka: 1, kc: 1}}
		resp, err := be.PushPull(ctx, defaultProject, 0, c, docID, p, false)
		if err != nil {
			b.Fatal(err)
		}
		size = proto.Size(resp)
	}
	b.ReportMetric(float64(size), "answer-bytes")
}
