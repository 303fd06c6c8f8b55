package dbtest_test

import (
	"context"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
)

// BenchmarkSnapshot saves and loads a 1 MB snapshot on every implementation
// in one run, so that their figures compare on one machine.
func BenchmarkSnapshot(b *testing.B) {
	impls := benchImpls()
	for _, impl := range impls {
		b.Run(impl.name+"/1MB", func(b *testing.B) {
			db := impl.open(b)
			defer func() { _ = db.Close(context.Background()) }()
			dbtest.BenchSnapshot(b, db, 1<<20)
		})
	}
}
