package mongo

import (
	"context"
	"strconv"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Claim implements sessionstore.Store: a role is a slot of the roles
// collection, held like a binding.
func (s *Store) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	op := "claim " + strconv.Quote(role)
	ctx, cancel, err := s.begin(ctx, op)
	if err != nil {
		return sessionstore.Member{}, err
	}
	defer cancel()
	d, err := s.roleSlots.acquire(ctx, role, owner)
	if err != nil {
		return sessionstore.Member{}, s.wrapErr(op, err)
	}
	return d.owner(), nil
}

// Resign implements sessionstore.Store.
func (s *Store) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	op := "resign " + strconv.Quote(role)
	ctx, cancel, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer cancel()
	d, ok, err := s.roleSlots.read(ctx, role)
	if err != nil {
		return s.wrapErr(op, err)
	}
	if !ok || d.owner() != owner {
		return nil
	}
	if _, err := s.roleSlots.takeover(ctx, d, owner); err != nil {
		return s.wrapErr(op, err)
	}
	return nil
}
