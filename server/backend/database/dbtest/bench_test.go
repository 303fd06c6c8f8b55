package dbtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
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
			return dbtest.DialMongo(b, m, m.Database)
		}},
	}
}
