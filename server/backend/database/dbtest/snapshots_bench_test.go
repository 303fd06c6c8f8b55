package dbtest_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// BenchmarkSnapshot saves and loads a 1 MB snapshot on every implementation
// in one run, so that their figures compare on one machine.
func BenchmarkSnapshot(b *testing.B) {
	impls := []struct {
		name string
		open func(b *testing.B) database.Database
	}{
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
	for _, impl := range impls {
		b.Run(impl.name+"/1MB", func(b *testing.B) {
			db := impl.open(b)
			defer func() { _ = db.Close(context.Background()) }()
			dbtest.BenchSnapshot(b, db, 1<<20)
		})
	}
}
