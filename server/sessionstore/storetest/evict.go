package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// testEvictEndsLeaseAndBindings: a member evicted by another node is gone
// as if its lease had run out: its binding is free for a takeover with a
// larger epoch, Members drops it, its own lease ends, and evicting it again
// or evicting an ended registration is no error. A later registration of
// the same address is not touched by the eviction of the earlier one.
func (s *suite) testEvictEndsLeaseAndBindings(t *testing.T) {
	c1, c2, ns, a, b := s.twoNodes(t)
	key := ns + "/doc"
	x := mustBind(t, c1, key, a.Member())
	again := s.register(t, c1, ns+"-a:2")

	require.NoError(t, c2.Evict(opCtx(t), a.Member()))
	wantUnbound(t, c2, key)
	require.Equal(t, memberSet(again, b), members(t, c2, ns), "Members after Evict")
	y := mustBind(t, c2, key, b.Member())
	require.Equal(t, b.Member(), y.Owner)
	require.Greater(t, y.Epoch, x.Epoch, "the takeover's epoch")
	_, err := c1.Bind(opCtx(t), ns+"/doc-2", a.Member())
	require.ErrorIs(t, err, sessionstore.ErrNotMember, "Bind to the evicted member")
	waitClosed(t, a.Done(), s.lossDeadline(), "Done of the evicted lease")

	require.NoError(t, c2.Evict(opCtx(t), a.Member()), "evicting an evicted member")
	require.NoError(t, a.Revoke(opCtx(t)), "revoking an evicted lease")
	require.False(t, isClosed(again.Done()), "evicting one registration ended another")
	mustBind(t, c1, ns+"/doc-3", again.Member())
}
