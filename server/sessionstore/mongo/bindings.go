package mongo

import (
	"context"
	"fmt"
	"strconv"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

func (d slotDoc) binding() sessionstore.Binding {
	return sessionstore.Binding{Key: d.ID, Owner: d.owner(), Epoch: d.Ver}
}

// Bind implements sessionstore.Store.
func (s *Store) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	op := "bind " + strconv.Quote(key)
	ctx, cancel, err := s.begin(ctx, op)
	if err != nil {
		return sessionstore.Binding{}, err
	}
	defer cancel()
	d, err := s.bindingSlots.acquire(ctx, key, owner)
	if err != nil {
		return sessionstore.Binding{}, s.wrapErr(op, err)
	}
	return d.binding(), nil
}

// Resolve implements sessionstore.Store.
func (s *Store) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	op := "resolve " + strconv.Quote(key)
	ctx, cancel, err := s.begin(ctx, op)
	if err != nil {
		return sessionstore.Binding{}, false, err
	}
	defer cancel()
	d, ok, err := s.bindingSlots.live(ctx, key)
	if err != nil {
		return sessionstore.Binding{}, false, s.wrapErr(op, err)
	}
	if !ok {
		return sessionstore.Binding{}, false, nil
	}
	return d.binding(), true, nil
}

// Release implements sessionstore.Store. A record that is the caller's but
// whose owner's lease ended is deleted too and reported as not owned.
func (s *Store) Release(ctx context.Context, b sessionstore.Binding) error {
	op := fmt.Sprintf("release %q epoch %d", b.Key, b.Epoch)
	ctx, cancel, err := s.begin(ctx, op)
	if err != nil {
		return err
	}
	defer cancel()
	ok, err := s.bindingSlots.release(ctx, slotDoc{ID: b.Key, Addr: b.Owner.Addr, Inc: b.Owner.Incarnation, Ver: b.Epoch})
	if err != nil {
		return s.wrapErr(op, err)
	}
	if !ok {
		return fmt.Errorf("mongo %s: %w", op, sessionstore.ErrNotOwner)
	}
	return nil
}
