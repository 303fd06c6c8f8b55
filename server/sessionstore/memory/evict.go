package memory

import (
	"context"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Evict ends m's lease now; see sessionstore.Evicter.
func (s *Store) Evict(ctx context.Context, m sessionstore.Member) error {
	return s.root.Evict(ctx, m)
}

// Evict ends m's lease now, its bindings and roles with it. In one process
// the evicted node's Done closes at once; other stores close it at its next
// renewal.
func (c *Client) Evict(ctx context.Context, m sessionstore.Member) error {
	if err := c.check(ctx, "evict"); err != nil {
		return err
	}
	if l := c.s.lookup(m); l != nil {
		l.end("evicted by another node")
	}
	return nil
}
