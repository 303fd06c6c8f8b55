package dbtest_test

import (
	"context"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/dbtest"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

func newMemory(t *testing.T) database.Database {
	db := memory.New()
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	return db
}

func TestMemory(t *testing.T) {
	dbtest.Run(t, newMemory)
}
