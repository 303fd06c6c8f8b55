package storetest

import (
	"context"
	"testing"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// LiveMember returns the member of s registered at addr, with its live
// incarnation, for a test that makes that member's lease end.
func LiveMember(tb testing.TB, s sessionstore.Store, addr string) sessionstore.Member {
	tb.Helper()
	ms, err := s.Members(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range ms {
		if m.Addr == addr {
			return m
		}
	}
	tb.Fatalf("%s is not a member", addr)
	return sessionstore.Member{}
}
