// Package wire is a client of Yorkie's wire protocol for tests: a Replica
// plays one SDK client on one document, building its changes, change packs
// and checkpoints the way the JS SDK does, and a Stream reads a Watch or
// WatchDocument stream so a test can wait for its messages with a deadline.
// It speaks through any v1connect.YorkieServiceClient, so the same client
// drives an in-process server, a cluster node or a separate process.
package wire

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
)

// WaitTimeout bounds every wait for a server answer or a stream message; it
// only ends runs that are already broken.
const WaitTimeout = 10 * time.Second

// maxKeyName is how much of the test name a key keeps, so that keys stay well
// under the server's key length limit.
const maxKeyName = 60

// UniqueKey returns a client or document key valid for Yorkie: the prefix,
// the (tail of the) test name and a random suffix, so keys of one test binary
// or of runs against a shared database do not collide.
func UniqueKey(t testing.TB, prefix string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, t.Name())
	if len(name) > maxKeyName {
		name = name[len(name)-maxKeyName:]
	}
	return fmt.Sprintf("%s-%s-%s", prefix, name, hex.EncodeToString(randomBytes(6)))
}

// randomBytes returns n random bytes; crypto/rand does not fail on the
// platforms Go supports.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Context returns a context that ends with the test or after WaitTimeout.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Must fails t with what and err when err is not nil.
func Must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ErrorInfo returns the metadata of the ErrorInfo detail of a Connect error,
// where the server names its error code ("code"); nil if err has none.
func ErrorInfo(err error) map[string]string {
	return errinfo.Metadata(err)
}
