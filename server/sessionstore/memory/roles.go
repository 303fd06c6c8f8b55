package memory

import (
	"context"
	"fmt"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Claim makes owner the holder of role unless a live member holds it; see
// sessionstore.Store.
func (s *Store) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	return s.root.Claim(ctx, role, owner)
}

// Resign ends owner's hold of role; see sessionstore.Store.
func (s *Store) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	return s.root.Resign(ctx, role, owner)
}

// Claim makes owner the holder of role unless a live member holds it, and
// returns the holder in force. The hold ends with owner's lease.
func (c *Client) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	if err := c.check(ctx, "claim"); err != nil {
		return sessionstore.Member{}, err
	}
	l := c.s.lookup(owner)
	if l == nil {
		return sessionstore.Member{}, fmt.Errorf("memory: claim %q for %s/%d: %w", role, owner.Addr, owner.Incarnation, sessionstore.ErrNotMember)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if cur := c.s.roles[role]; cur != nil && cur.alive() {
		return cur.member, nil
	}
	c.s.roles[role] = l
	return owner, nil
}

// Resign ends owner's hold of role; it does nothing if owner does not hold it.
func (c *Client) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	if err := c.check(ctx, "resign"); err != nil {
		return err
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if cur := c.s.roles[role]; cur != nil && cur.member == owner {
		delete(c.s.roles, role)
	}
	return nil
}

// forgetRoles drops the roles l held. The caller holds s.mu.
func (s *Store) forgetRoles(l *lease) {
	for role, holder := range s.roles {
		if holder == l {
			delete(s.roles, role)
		}
	}
}
