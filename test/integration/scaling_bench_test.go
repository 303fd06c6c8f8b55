package integration_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// scaleSizes are the sizes the scaling benchmarks build before measuring:
// small by default, so CI runs them in seconds; YORKIE_BENCH_SCALE=1 adds
// the large ones (100k and 1M documents, 10k and 40k attached before).
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
	for _, history := range scaleSizes([]int{0, 2_000}, []int{10_000, 40_000}) {
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

// BenchmarkCallsAtDatabaseSize measures a new client's attach, a PushPull
// of one change and opening a Watch stream (to its initialization) while the
// database holds `docs` other documents, each with an attachment of its own
// client: no call may cost more as the database grows. It runs on the memory
// database (1k and 10k; 100k and 1M with YORKIE_BENCH_SCALE=1) and on the
// MongoDB-wire test server (1k; 10k and 100k with YORKIE_BENCH_SCALE=1).
// cpu-us/op is the process's CPU (client and server, in-process) per call.
func BenchmarkCallsAtDatabaseSize(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		for _, docs := range scaleSizes([]int{1_000, 10_000}, []int{100_000, 1_000_000}) {
			b.Run(fmt.Sprintf("docs=%d", docs), func(b *testing.B) {
				db := memory.New()
				callsAtSize(b, db, docs, func(ctx context.Context, as []*database.Attachment) error {
					return parallelFill(len(as), 16, func(i int) error { return db.UpdateAttachment(ctx, as[i], 0) })
				})
			})
		}
	})
	b.Run("mongo", func(b *testing.B) {
		m := testenv.MongoURI(b)
		for _, docs := range scaleSizes([]int{1_000}, []int{10_000, 100_000}) {
			b.Run(fmt.Sprintf("docs=%d", docs), func(b *testing.B) {
				name := m.NewDatabase()
				callsAtSize(b, dbtest.DialMongo(b, m, name), docs, func(ctx context.Context, as []*database.Attachment) error {
					return insertAttachments(ctx, m.URI, name, as)
				})
			})
		}
	})
}

// callsAtSize fills db with docs documents, each attached by a client of
// its own (the attachments stored by attach), then measures the calls on a
// server over it.
func callsAtSize(b *testing.B, db database.Database, docs int, attach func(context.Context, []*database.Attachment) error) {
	ctx := context.Background()
	as := make([]*database.Attachment, docs)
	err := parallelFill(docs, 16, func(i int) error {
		cl, err := db.ActivateClient(ctx, database.DefaultProjectID, fmt.Sprintf("filler-%d", i), nil)
		if err != nil {
			return err
		}
		d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fmt.Sprintf("filler-%d", i))
		if err != nil {
			return err
		}
		as[i] = &database.Attachment{ClientID: cl.ID, DocID: d.ID, Status: database.Attached}
		return nil
	})
	if err == nil {
		err = attach(ctx, as)
	}
	if err != nil {
		b.Fatal(err)
	}
	if n, err := db.CountClientAttachments(ctx, as[docs-1].ClientID); err != nil || n != 1 {
		b.Fatalf("a filler's attachments: %d, %v", n, err)
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
	b.Run("watch", func(b *testing.B) {
		// Each op opens a stream of a client attached beforehand, takes its
		// initialization and closes it; only that is counted.
		var cpu time.Duration
		b.StopTimer()
		for range b.N {
			r := newReplica(b, c)
			r.MustAttach(wire.UniqueKey(b, "doc"))
			b.StartTimer()
			before := processCPU(b)
			watchOnce(ctx, b, r)
			cpu += processCPU(b) - before
			b.StopTimer()
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	})
}

// watchOnce opens r's Watch stream, takes its initialization and closes it.
func watchOnce(ctx context.Context, b *testing.B, r *wire.Replica) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := r.C.Watch(ctx, r.WatchRequest())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	if !stream.Receive() || stream.Msg().GetInitialization() == nil {
		b.Fatalf("watch: no initialization: %v", stream.Err())
	}
}

// parallelFill runs fill(0..n-1) on conc goroutines and returns the first
// error; after one, the remaining indexes are skipped.
func parallelFill(n, conc int, fill func(i int) error) error {
	var (
		next     atomic.Int64
		firstErr error
		once     sync.Once
		wg       sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fill(i); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("fill %d: %w", i, err) })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// insertAttachments stores the attachments straight into the MongoDB
// database name, as the mongo package's UpdateAttachment writes them, in
// batches: on the MongoDB-wire test server (FerretDB on SQLite) every
// UpdateAttachment scans the collection (its filter is not the _id alone),
// so filling 10k attachments through it takes about an hour.
func insertAttachments(ctx context.Context, uri, name string, as []*database.Attachment) error {
	cl, err := mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer func() { _ = cl.Disconnect(context.Background()) }()
	col := cl.Database(name).Collection("attachments")
	now := time.Now()
	for lo := 0; lo < len(as); lo += 1000 {
		var batch []any
		for _, a := range as[lo:min(lo+1000, len(as))] {
			batch = append(batch, bson.D{
				{Key: "_id", Value: a.ClientID + "/" + a.DocID},
				{Key: "client_id", Value: a.ClientID}, {Key: "doc_id", Value: a.DocID},
				{Key: "status", Value: string(a.Status)},
				{Key: "server_seq", Value: int64(0)}, {Key: "client_seq", Value: int64(0)},
				{Key: "attached_at", Value: int64(0)}, {Key: "updated_at", Value: now},
				{Key: "epoch", Value: int64(0)},
			})
		}
		if _, err := col.InsertMany(ctx, batch); err != nil {
			return fmt.Errorf("insert attachments %d..: %w", lo, err)
		}
	}
	return nil
}
