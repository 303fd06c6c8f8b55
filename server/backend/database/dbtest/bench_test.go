package dbtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// BenchmarkAppendFind runs the same push-pull core on every implementation
// in one run, so that their figures compare as ratios on one machine.
func BenchmarkAppendFind(b *testing.B) {
	impls := benchImpls()
	for _, impl := range impls {
		for _, size := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/batch=%d", impl.name, size), func(b *testing.B) {
				db := impl.open(b)
				defer func() { _ = db.Close(context.Background()) }()
				dbtest.BenchAppendFind(b, db, size)
			})
		}
	}
}

// dropDatabase removes a benchmark's database from an external server.
func dropDatabase(b *testing.B, uri, name string) {
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

// benchImpl opens one database implementation for a benchmark.
type benchImpl struct {
	name string
	open func(b *testing.B) database.Database
}

// benchImpls lists every implementation, so that one benchmark measures them
// all in one run and their figures compare as ratios on one machine.
func benchImpls() []benchImpl {
	return []benchImpl{
		{"memory", func(b *testing.B) database.Database { return memory.New() }},
		{"mongo", func(b *testing.B) database.Database {
			m := testenv.MongoURI(b)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			db, err := mongo.Dial(ctx, mongo.Config{
				URI: m.URI, Database: m.Database,
				Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			if err != nil {
				b.Fatal(err)
			}
			if !m.Managed() {
				b.Cleanup(func() { dropDatabase(b, m.URI, m.Database) })
			}
			return db
		}},
	}
}
