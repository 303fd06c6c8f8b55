package backend_test

import (
	"fmt"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
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
		run(b, func(b *testing.B) database.Database { return dbtest.DialMongo(b, m, m.NewDatabase()) })
	})
}
