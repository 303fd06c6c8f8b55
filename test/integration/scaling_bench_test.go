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
	"go.mongodb.org/mongo-driver/bson/primitive"
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
				callsAtSize(b, db, docs, func(ctx context.Context) ([]*database.Attachment, error) {
					return fillThroughDB(ctx, db, docs)
				})
			})
		}
	})
	b.Run("mongo", func(b *testing.B) {
		m := testenv.MongoURI(b)
		for _, docs := range scaleSizes([]int{1_000}, []int{10_000, 100_000}) {
			b.Run(fmt.Sprintf("docs=%d", docs), func(b *testing.B) {
				name := m.NewDatabase()
				db := dbtest.DialMongo(b, m, name)
				callsAtSize(b, db, docs, func(ctx context.Context) ([]*database.Attachment, error) {
					return insertFillers(ctx, m.URI, name, docs)
				})
			})
		}
	})
}

// callsAtSize fills db with docs documents, each attached by a client of
// its own (fill returns the attachments), then measures the calls on a
// server over it. The calls take no deadline: on the MongoDB-wire test
// server an attach at 100k documents takes longer than the tests' waits.
func callsAtSize(b *testing.B, db database.Database, docs int, fill func(context.Context) ([]*database.Attachment, error)) {
	ctx := context.Background()
	as, err := fill(ctx)
	if err != nil {
		b.Fatal(err)
	}
	checkFiller(ctx, b, db, docs-1, as[docs-1])
	srv := servertest.Start(b, func(cfg *server.Config) {
		cfg.DB = db
		// Housekeeping's periodic runs stay out of the measured calls: on
		// the MongoDB-wire test server each one scans the clients.
		cfg.HousekeepingInterval = time.Hour
	})
	b.Cleanup(func() {
		// Shutting down writes the activity of the measured clients, a
		// scan of the clients on the MongoDB-wire test server: longer than
		// servertest waits at 100k documents. Its own shutdown, after this
		// one, finds the server down.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("shut down server: %v", err)
		}
	})
	c := servertest.Client(b, srv, servertest.ConnectProto)
	attach := func() *wire.Replica {
		r := newReplica(b, c)
		if _, err := r.Attach(ctx, wire.UniqueKey(b, "doc")); err != nil {
			b.Fatal(err)
		}
		return r
	}
	b.Run("attach", func(b *testing.B) {
		before := processCPU(b)
		for range b.N {
			attach()
		}
		b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("pushpull", func(b *testing.B) {
		b.StopTimer()
		r := attach()
		b.StartTimer()
		before := processCPU(b)
		for range b.N {
			r.Edit(1)
			if _, err := r.PushPull(ctx); err != nil {
				b.Fatalf("pushpull: %v", err)
			}
		}
		b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("watch", func(b *testing.B) {
		// Each op opens a stream of a client attached beforehand, takes its
		// initialization and closes it; only that is counted.
		var cpu time.Duration
		b.StopTimer()
		for range b.N {
			r := attach()
			b.StartTimer()
			before := processCPU(b)
			watchOnce(ctx, b, r)
			cpu += processCPU(b) - before
			b.StopTimer()
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	})
}

// fillerKey is the key of the i-th filler's client and document.
func fillerKey(i int) string { return fmt.Sprintf("filler-%d", i) }

// fillThroughDB makes docs clients and documents and attaches each client
// to its document through db's own calls.
func fillThroughDB(ctx context.Context, db database.Database, docs int) ([]*database.Attachment, error) {
	as := make([]*database.Attachment, docs)
	err := parallelFill(docs, 16, func(i int) error {
		cl, err := db.ActivateClient(ctx, database.DefaultProjectID, fillerKey(i), nil)
		if err != nil {
			return err
		}
		d, err := db.FindOrCreateDocument(ctx, database.DefaultProjectID, fillerKey(i))
		if err != nil {
			return err
		}
		as[i] = &database.Attachment{ClientID: cl.ID, DocID: d.ID, Status: database.Attached}
		return db.UpdateAttachment(ctx, as[i], 0)
	})
	if err != nil {
		return nil, err
	}
	return as, nil
}

// checkFiller fails b unless db finds the i-th filler as the fill left it:
// its client, its document by key and its one attachment. It is what shows
// that records written straight into the collections read as the server's.
func checkFiller(ctx context.Context, b *testing.B, db database.Database, i int, a *database.Attachment) {
	b.Helper()
	if _, err := db.FindClient(ctx, database.DefaultProjectID, a.ClientID); err != nil {
		b.Fatalf("filler %d's client: %v", i, err)
	}
	d, err := db.FindDocumentByKey(ctx, database.DefaultProjectID, fillerKey(i))
	if err != nil || d.ID != a.DocID {
		b.Fatalf("filler %d's document by key: %v, %v (want %s)", i, d, err, a.DocID)
	}
	if n, err := db.CountClientAttachments(ctx, a.ClientID); err != nil || n != 1 {
		b.Fatalf("filler %d's attachments: %d, %v", i, n, err)
	}
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

// insertFillers writes docs clients, documents (with their key records)
// and attachments straight into the MongoDB database name, as the mongo
// package stores them, in batches of 1,000: on the MongoDB-wire test server
// (FerretDB on SQLite) writing them one call at a time takes minutes at 10k
// documents, and every UpdateAttachment scans the collection (its filter is
// not the _id alone). checkFiller reads them back through the package.
func insertFillers(ctx context.Context, uri, name string, docs int) ([]*database.Attachment, error) {
	cl, err := mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
	if err != nil {
		return nil, err
	}
	defer func() { _ = cl.Disconnect(context.Background()) }()
	mdb := cl.Database(name)
	now := time.Now()
	as := make([]*database.Attachment, docs)
	for lo := 0; lo < docs; lo += 1000 {
		var clients, documents, keys, attachments []any
		for i := lo; i < min(lo+1000, docs); i++ {
			clientID, docID := primitive.NewObjectID(), primitive.NewObjectID()
			key := fillerKey(i)
			as[i] = &database.Attachment{ClientID: clientID.Hex(), DocID: docID.Hex(), Status: database.Attached}
			clients = append(clients, bson.D{
				{Key: "_id", Value: clientID}, {Key: "project_id", Value: database.DefaultProjectID},
				{Key: "key", Value: key}, {Key: "status", Value: string(database.ClientActivated)},
				{Key: "created_at", Value: now}, {Key: "updated_at", Value: now},
			})
			documents = append(documents, bson.D{
				{Key: "_id", Value: docID}, {Key: "project_id", Value: database.DefaultProjectID},
				{Key: "key", Value: key}, {Key: "created_at", Value: now}, {Key: "head_hint", Value: int64(0)},
			})
			// A key record of the default project is keyed by the key alone.
			keys = append(keys, bson.D{{Key: "_id", Value: key}, {Key: "doc_id", Value: docID}})
			attachments = append(attachments, bson.D{
				{Key: "_id", Value: as[i].ClientID + "/" + as[i].DocID},
				{Key: "client_id", Value: as[i].ClientID}, {Key: "doc_id", Value: as[i].DocID},
				{Key: "status", Value: string(database.Attached)},
				{Key: "server_seq", Value: int64(0)}, {Key: "client_seq", Value: int64(0)},
				{Key: "attached_at", Value: int64(0)}, {Key: "updated_at", Value: now},
				{Key: "epoch", Value: int64(0)},
			})
		}
		for _, batch := range []struct {
			col  string
			recs []any
		}{{"clients", clients}, {"documents", documents}, {"doc_keys", keys}, {"attachments", attachments}} {
			if _, err := mdb.Collection(batch.col).InsertMany(ctx, batch.recs); err != nil {
				return nil, fmt.Errorf("insert %s %d..: %w", batch.col, lo, err)
			}
		}
	}
	return as, nil
}
