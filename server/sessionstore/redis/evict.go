package redis

import (
	"context"
	"strconv"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Evict deletes m's member key if it still holds m's incarnation, as a
// revocation does, and announces the leave; m's bindings and roles are dead
// with it, and m's own renewal finds the key gone at its next try (TTL/3).
func (s *Store) Evict(ctx context.Context, m sessionstore.Member) error {
	var n int64
	err := s.do(ctx, s.scripts.revoke.Cmd(&n,
		[]string{s.memberKey(m), s.membersKey},
		strconv.FormatInt(m.Incarnation, 10), memberID(m), s.channel))
	if err != nil {
		return s.wrapErr("evict", err)
	}
	return nil
}
