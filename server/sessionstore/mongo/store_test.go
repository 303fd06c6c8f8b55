package mongo

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	mongodrv "go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// newTestStore connects a store to the test server and closes it when t ends.
func newTestStore(t testing.TB, m *testenv.Mongo, cfg Config) *Store {
	t.Helper()
	cfg.URI = m.URI
	cfg.Database = m.Database
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// expireByDelete deletes the lease's member record through a connection of
// its own, as another node does once it has declared the member dead; the
// lease's next renewal finds it gone and ends the lease.
func expireByDelete(m *testenv.Mongo, prefix string) func(t *testing.T, s sessionstore.Store, l sessionstore.Lease) {
	return func(t *testing.T, _ sessionstore.Store, l sessionstore.Lease) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := mongodrv.Connect(ctx, options.Client().ApplyURI(m.URI))
		require.NoError(t, err)
		defer func() { _ = c.Disconnect(ctx) }()
		res, err := c.Database(m.Database).Collection(prefix+"members").DeleteOne(ctx, bson.D{{Key: "_id", Value: memberID(l.Member())}})
		require.NoError(t, err)
		require.EqualValues(t, 1, res.DeletedCount, "member record of %+v", l.Member())
	}
}

func TestConformance(t *testing.T) {
	m := testenv.MongoURI(t)
	m.DropWhenDone(t, m.Database)
	storetest.Run(t, storetest.Config{
		New: func(t *testing.T) sessionstore.Store {
			return newTestStore(t, m, Config{})
		},
		TTL:    time.Second,
		Expire: expireByDelete(m, DefaultPrefix),
	})
}
