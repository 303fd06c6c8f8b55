package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Evict revokes m's lease in etcd: a member's incarnation is its lease ID,
// so the member record, its bindings and its roles go in one step, and the
// member's own keepalive finds the lease gone at its next renewal (TTL/3).
// The member record is checked first, so an incarnation that is not a
// member at m's address is not revoked (whatever lease it names).
func (s *Store) Evict(ctx context.Context, m sessionstore.Member) error {
	op := fmt.Sprintf("evict %s/%x", m.Addr, m.Incarnation)
	if err := s.check(ctx, op); err != nil {
		return err
	}
	if m.Addr == "" || m.Incarnation <= 0 {
		return nil
	}
	id := clientv3.LeaseID(m.Incarnation)
	resp, err := s.cli.Get(ctx, s.memberKey(m), clientv3.WithKeysOnly())
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if len(resp.Kvs) == 0 || clientv3.LeaseID(resp.Kvs[0].Lease) != id {
		return nil // gone already
	}
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return s.fail(ctx, op, err)
	}
	return nil
}
