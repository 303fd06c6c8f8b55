package dbtest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// DialMongo opens database name of the MongoDB-wire server m for a test or
// benchmark. The handle is closed when it ends, and on an external server the
// database is dropped then too. Only warnings are logged, so that a failing
// run shows why the server misbehaved.
func DialMongo(t testing.TB, m *testenv.Mongo, name string) *mongo.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := mongo.Dial(ctx, mongo.Config{
		URI:            m.URI,
		Database:       name,
		ConnectTimeout: 5 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("dial %s: %v", m.URI, err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	m.DropWhenDone(t, name)
	return db
}
