package mongo

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

func benchStore(b *testing.B) *Store {
	m := testenv.MongoURI(b)
	m.DropWhenDone(b, m.Database)
	return newTestStore(b, m, Config{CommandTimeout: 30 * time.Second})
}

// BenchmarkResolveHit resolves a live binding (two reads by _id: the slot and
// its owner's record).
func BenchmarkResolveHit(b *testing.B) { storetest.BenchResolveHit(b, benchStore(b)) }

// BenchmarkBind binds a fresh key each time (slot read, owner read, counter
// draw of two reads and an insert, slot insert).
func BenchmarkBind(b *testing.B) { storetest.BenchBind(b, benchStore(b)) }

// BenchmarkRenew renews a lease (what each node does every TTL/3).
func BenchmarkRenew(b *testing.B) {
	storetest.BenchRenewal(b, benchStore(b), func(ctx context.Context, l sessionstore.Lease) error {
		ok, err := l.(*lease).renew(ctx)
		if err == nil && !ok {
			return errors.New("lease lost")
		}
		return err
	})
}
