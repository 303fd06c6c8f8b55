package mongo

import (
	"context"

	"go.mongodb.org/mongo-driver/bson"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Evict implements sessionstore.Evicter: it deletes m's member record by
// _id, which names that incarnation only, as Revoke does; m's bindings and
// roles are dead with it, and m's own renewal finds the record gone at its
// next try (TTL/3).
func (s *Store) Evict(ctx context.Context, m sessionstore.Member) error {
	ctx, cancel, err := s.begin(ctx, "evict")
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := s.members.DeleteOne(ctx, bson.D{{Key: "_id", Value: memberID(m)}}); err != nil {
		return s.wrapErr("evict", err)
	}
	s.obs.forget(memberID(m))
	s.kickWatches()
	return nil
}
