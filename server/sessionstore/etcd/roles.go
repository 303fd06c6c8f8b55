package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Claim puts the role under the owner's lease if the owner is a member and
// nobody holds the role, in one transaction, as Bind does; otherwise it
// returns the holder. The key goes with the holder's lease.
func (s *Store) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	op := fmt.Sprintf("claim %q for %s/%x", role, owner.Addr, owner.Incarnation)
	if err := s.check(ctx, op); err != nil {
		return sessionstore.Member{}, err
	}
	if owner.Addr == "" || strings.Contains(owner.Addr, "/") || owner.Incarnation <= 0 {
		return sessionstore.Member{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
	}
	mkey, rkey := s.memberKey(owner), s.roles+role
	for range 3 {
		resp, err := s.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(mkey), ">", 0),
				clientv3.Compare(clientv3.CreateRevision(rkey), "=", 0),
			).
			Then(clientv3.OpPut(rkey, encode(owner), clientv3.WithLease(clientv3.LeaseID(owner.Incarnation)))).
			Else(clientv3.OpGet(mkey, clientv3.WithKeysOnly()), clientv3.OpGet(rkey)).
			Commit()
		if err != nil {
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return sessionstore.Member{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
			}
			return sessionstore.Member{}, s.fail(ctx, op, err)
		}
		if resp.Succeeded {
			return owner, nil
		}
		if len(resp.Responses) != 2 {
			return sessionstore.Member{}, fmt.Errorf("etcd session store: %s: %d answers to 2 reads: %w", op, len(resp.Responses), sessionstore.ErrMalformed)
		}
		if len(resp.Responses[0].GetResponseRange().GetKvs()) == 0 {
			return sessionstore.Member{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
		}
		if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
			return decode(string(kvs[0].Key), kvs[0].Value)
		}
		// The holder's lease ended between the two reads: try again.
	}
	return sessionstore.Member{}, fmt.Errorf("etcd session store: %s: transaction failed without a reason", op)
}

// Resign deletes the role's key only if it still names owner.
func (s *Store) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	op := fmt.Sprintf("resign %q for %s/%x", role, owner.Addr, owner.Incarnation)
	if err := s.check(ctx, op); err != nil {
		return err
	}
	rkey := s.roles + role
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(rkey), "=", encode(owner))).
		Then(clientv3.OpDelete(rkey)).
		Commit()
	if err != nil {
		return s.fail(ctx, op, err)
	}
	return nil
}
