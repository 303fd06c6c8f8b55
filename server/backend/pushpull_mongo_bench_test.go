package backend_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// BenchmarkPushPullByDatabase runs the same PushPull load on the memory
// database and on the MongoDB backend (FerretDB, or the server named by
// YORKIE_TEST_MONGO_URI) in one run, so the two compare as a ratio. Each op
// is one PushPull storing one change; clients push concurrently, on one
// document or each on its own. It reports ops/s and us/op of wall time.
func BenchmarkPushPullByDatabase(b *testing.B) {
	cases := []struct{ clients, docs int }{{1, 1}, {10, 1}, {10, 10}}
	run := func(b *testing.B, open func(b *testing.B) database.Database) {
		for _, tc := range cases {
			b.Run(fmt.Sprintf("clients=%d/docs=%d", tc.clients, tc.docs), func(b *testing.B) {
				pushPullLoad(b, open(b), tc.clients, tc.docs)
			})
		}
	}
	b.Run("memory", func(b *testing.B) {
		run(b, func(*testing.B) database.Database { return memory.New() })
	})
	b.Run("mongo", func(b *testing.B) {
		m := testenv.MongoURI(b)
		run(b, func(b *testing.B) database.Database { return benchMongo(b, m) })
	})
}

// benchMongo opens a fresh database of the server for one benchmark run.
func benchMongo(b *testing.B, m *testenv.Mongo) database.Database {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := m.NewDatabase()
	db, err := mongo.Dial(ctx, mongo.Config{URI: m.URI, Database: name, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatalf("dial %s: %v", m.URI, err)
	}
	b.Cleanup(func() { _ = db.Close(context.Background()) })
	if !m.Managed() {
		b.Cleanup(func() { dropBenchDatabase(b, m.URI, name) })
	}
	return db
}

// dropBenchDatabase removes a run's database from an external server.
func dropBenchDatabase(b testing.TB, uri, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(uri))
	if err != nil {
		b.Logf("drop benchmark database %s: %v", name, err)
		return
	}
	defer func() { _ = c.Disconnect(ctx) }()
	if err := c.Database(name).Drop(ctx); err != nil {
		b.Logf("drop benchmark database %s: %v", name, err)
	}
}
