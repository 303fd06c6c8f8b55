// Package poll waits in tests for a condition that no event announces, such
// as a lease expiring in a store or a node noticing a peer has gone.
package poll

import (
	"testing"
	"time"
)

// interval is how long Until sleeps between two checks: short next to any
// timeout a test gives, long enough not to load the machine.
const interval = 10 * time.Millisecond

// Until calls check until it returns nil and fails t with what and check's
// last error once timeout has passed; the timeout only ends runs that are
// already broken.
func Until(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// errFalse is the last error of a condition that never held.
type errFalse struct{}

func (errFalse) Error() string { return "condition still false" }

// UntilTrue is Until for a condition with nothing to say about why it does
// not hold yet.
func UntilTrue(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errFalse{}
	})
}
