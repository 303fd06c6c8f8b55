package integration_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// scaleSizes are the sizes the scaling benchmarks build before measuring:
// small by default, so CI runs them in seconds; YORKIE_BENCH_SCALE=1 adds
// the large ones (100k and 1M documents, 40k attached before).
func scaleSizes(small, large []int) []int {
	if on, _ := strconv.ParseBool(os.Getenv("YORKIE_BENCH_SCALE")); on {
		return append(small, large...)
	}
	return small
}

// BenchmarkAttachAfterHistory measures an attach and detach cycle of a
// long-lived client that attached and detached `history` other documents
// before: the per-client attachment limit is checked on every attach, and
// its cost must follow what the client holds, not what it ever held.
func BenchmarkAttachAfterHistory(b *testing.B) {
	for _, history := range scaleSizes([]int{0, 2_000}, []int{40_000}) {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			srv := servertest.Start(b)
			c := servertest.Client(b, srv, servertest.ConnectProto)
			r := newReplica(b, c)
			ctx := context.Background()
			cycle := func(i int, phase string) {
				if _, err := r.Attach(ctx, wire.UniqueKey(b, fmt.Sprintf("%s-%d", phase, i))); err != nil {
					b.Fatal(err)
				}
				if _, err := r.Detach(ctx); err != nil {
					b.Fatal(err)
				}
			}
			for i := range history {
				cycle(i, "history")
			}
			b.ResetTimer()
			before := processCPU(b)
			for i := range b.N {
				cycle(i, "measured")
			}
			b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

// BenchmarkCallsAtDatabaseSize measures a new client's attach and a
// PushPull of one change while the database holds `docs` other documents,
// each with an attachment of its own client: no call may cost more as the
// database grows.
func BenchmarkCallsAtDatabaseSize(b *testing.B) {
	for _, docs := range scaleSizes([]int{1_000, 10_000}, []int{100_000, 1_000_000}) {
		b.Run(fmt.Sprintf("docs=%d", docs), func(b *testing.B) {
			db := memory.New()
			ctx := context.Background()
			for i := range docs {
				cl, err := db.ActivateClient(ctx, database.DefaultProjectID, fmt.Sprintf("filler-%d", i), nil)
				if err != nil {
					b.Fatal(err)
				}
				d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprintf("filler-%d", i))
				if err != nil {
					b.Fatal(err)
				}
				if err := db.UpdateAttachment(ctx, &database.Attachment{ClientID: cl.ID, DocID: d.ID, Status: database.Attached}, 0); err != nil {
					b.Fatal(err)
				}
			}
			srv := servertest.Start(b, func(cfg *server.Config) { cfg.DB = db })
			c := servertest.Client(b, srv, servertest.ConnectProto)
			b.Run("attach", func(b *testing.B) {
				before := processCPU(b)
				for range b.N {
					r := newReplica(b, c)
					r.MustAttach(wire.UniqueKey(b, "doc"))
				}
				b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
			})
			b.Run("pushpull", func(b *testing.B) {
				before := processCPU(b)
				pushPullLoop(b, c)
				b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
			})
		})
	}
}
