package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// runRoles runs the subtests of Claim and Resign.
func (s *suite) runRoles(t *testing.T) {
	t.Run("ClaimKeepsFirstHolder", s.testClaimKeepsFirstHolder)
	t.Run("ClaimByNonMember", s.testClaimByNonMember)
	t.Run("ConcurrentClaimersAgree", s.testConcurrentClaimersAgree)
	t.Run("RoleEndsWithRevokedLease", s.testRoleEndsWithRevokedLease)
	t.Run("RoleEndsWithExpiredLease", s.testRoleEndsWithExpiredLease)
}

func mustClaim(t *testing.T, c sessionstore.Store, role string, owner sessionstore.Member) sessionstore.Member {
	t.Helper()
	m, err := c.Claim(opCtx(t), role, owner)
	if err != nil {
		t.Fatalf("Claim(%s, %+v): %v", role, owner, err)
	}
	return m
}

func wantHolder(t *testing.T, c sessionstore.Store, role string, claimant, want sessionstore.Member) {
	t.Helper()
	if got := mustClaim(t, c, role, claimant); got != want {
		t.Fatalf("Claim(%s) by %+v = %+v; want holder %+v", role, claimant, got, want)
	}
}

func (s *suite) testClaimKeepsFirstHolder(t *testing.T) {
	c1, c2 := s.client(t), s.client(t)
	ns := namespace(t)
	role := ns + "/housekeeping"
	a := s.register(t, c1, ns+"-a:1").Member()
	b := s.register(t, c2, ns+"-b:1").Member()

	wantHolder(t, c1, role, a, a)
	wantHolder(t, c2, role, b, a)
	wantHolder(t, c1, role, a, a) // claiming again keeps it
	// A role is not a binding: the same name as a document key is separate.
	if bd := mustBind(t, c2, role, b); bd.Owner != b {
		t.Fatalf("Bind of a key named like a held role = %+v; want owner %+v", bd, b)
	}
	wantHolder(t, c2, role, b, a)

	if err := c2.Resign(opCtx(t), role, b); err != nil {
		t.Fatalf("Resign by a non-holder: %v", err)
	}
	wantHolder(t, c2, role, b, a)
	if err := c1.Resign(opCtx(t), role, a); err != nil {
		t.Fatalf("Resign by the holder: %v", err)
	}
	wantHolder(t, c2, role, b, b)
	wantHolder(t, c1, role, a, b)
	if err := c1.Resign(opCtx(t), ns+"/never-claimed", a); err != nil {
		t.Fatalf("Resign of a role nobody holds: %v", err)
	}
}

func (s *suite) testClaimByNonMember(t *testing.T) {
	c := s.client(t)
	ns := namespace(t)
	role := ns + "/housekeeping"
	a := s.register(t, c, ns+"-a:1")
	stranger := sessionstore.Member{Addr: a.Member().Addr, Incarnation: a.Member().Incarnation + 1000003}
	if m, err := c.Claim(opCtx(t), role, stranger); !errors.Is(err, sessionstore.ErrNotMember) {
		t.Fatalf("Claim by non-member = %+v, %v; want ErrNotMember", m, err)
	}
	revoked := s.register(t, c, ns+"-b:1")
	if err := revoked.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if m, err := c.Claim(opCtx(t), role, revoked.Member()); !errors.Is(err, sessionstore.ErrNotMember) {
		t.Fatalf("Claim by revoked member = %+v, %v; want ErrNotMember", m, err)
	}
	// Nobody holds it after the refusals.
	wantHolder(t, c, role, a.Member(), a.Member())
}

func (s *suite) testConcurrentClaimersAgree(t *testing.T) {
	const (
		clients    = 3
		goroutines = 8
		rounds     = 4
	)
	ns := namespace(t)
	cs, ls := s.nodes(t, ns, clients)
	for r := range rounds {
		role := fmt.Sprintf("%s/role-%d", ns, r)
		results, errs := race(clients, goroutines, func(i int) (sessionstore.Member, error) {
			return cs[i].Claim(opCtx(t), role, ls[i].Member())
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("role %s: claimant %d: %v", role, i, err)
			}
		}
		winner := results[0]
		if !slices.ContainsFunc(ls, func(l sessionstore.Lease) bool { return l.Member() == winner }) {
			t.Fatalf("role %s: holder %+v is not one of the claimants", role, winner)
		}
		for i, m := range results {
			if m != winner {
				t.Fatalf("role %s: claimant %d was told %+v, claimant 0 was told %+v", role, i, m, winner)
			}
		}
	}
}

func (s *suite) testRoleEndsWithRevokedLease(t *testing.T) {
	c1, c2, ns, a, lb := s.twoNodes(t)
	role := ns + "/housekeeping"
	b := lb.Member()
	wantHolder(t, c1, role, a.Member(), a.Member())
	if err := a.Revoke(opCtx(t)); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	wantHolder(t, c2, role, b, b)
}

func (s *suite) testRoleEndsWithExpiredLease(t *testing.T) {
	if s.cfg.Expire == nil {
		t.Skip("Config.Expire is nil")
	}
	c1, c2, ns, a, lb := s.twoNodes(t)
	role := ns + "/housekeeping"
	b := lb.Member()
	wantHolder(t, c1, role, a.Member(), a.Member())

	s.cfg.Expire(t, c1, a)
	poll.Until(t, s.lossDeadline(), "takeover of "+role, func() error {
		got := mustClaim(t, c2, role, b)
		switch got {
		case b:
			return nil
		case a.Member():
			return fmt.Errorf("still held by %+v", got)
		}
		t.Fatalf("Claim = %+v: neither the expired holder nor the claimant", got)
		return nil
	})
	wantHolder(t, c1, role, b, b)
}
