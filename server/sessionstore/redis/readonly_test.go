package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/mediocregopher/radix/v4"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// clientID returns the server-side id of the connection the pool hands out.
// With a pool of one connection it names that connection, and it waits for a
// re-dial if the connection was discarded.
func clientID(t *testing.T, s *Store) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var id int64
	if err := s.do(ctx, radix.Cmd(&id, "CLIENT", "ID")); err != nil {
		t.Fatalf("CLIENT ID: %v", err)
	}
	return id
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestReadOnlyReplyReplacesConnection demotes the server under a store with a
// one-connection pool and checks, on both radix paths, that a READONLY answer
// fails the command and replaces the connection, while ordinary error
// replies keep it; and that with KeepConnOnReadOnly the connection stays.
func TestReadOnlyReplyReplacesConnection(t *testing.T) {
	for _, tc := range []struct {
		name        string
		viaWithConn bool
		keep        bool
	}{
		{"shared", false, false},
		{"WithConn", true, false},
		{"shared/off", false, true},
		{"WithConn/off", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := testenv.StartRedis(t)
			r := testenv.StartRedis(t)
			s := newTestStore(t, r.Addr, Config{PoolSize: 1, KeepConnOnReadOnly: tc.keep})
			s.viaWithConn = tc.viaWithConn
			ctx := ctxT(t)

			// Ordinary error replies keep the connection.
			first := clientID(t, s)
			if err := s.do(ctx, radix.Cmd(nil, "NOSUCHCOMMAND")); err == nil {
				t.Fatalf("unknown command succeeded")
			}
			r.MustCommand(t, "SET", s.membersKey, "not a set")
			if _, err := s.Members(ctx); !errors.Is(err, sessionstore.ErrMalformed) {
				t.Fatalf("Members over a WRONGTYPE record = %v, want ErrMalformed", err)
			}
			r.MustCommand(t, "DEL", s.membersKey)
			r.MustCommand(t, "SCRIPT", "FLUSH")
			if _, err := s.Members(ctx); err != nil {
				t.Fatalf("Members after SCRIPT FLUSH (NOSCRIPT, then EVAL): %v", err)
			}
			if got := clientID(t, s); got != first {
				t.Fatalf("connection replaced after ordinary error replies: id %d, was %d", got, first)
			}

			// Demote the server: the open connection now answers READONLY.
			r.MustCommand(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port))
			_, err := s.Register(ctx, "node-a:1", time.Minute)
			if !errors.Is(err, sessionstore.ErrUnavailable) {
				t.Fatalf("Register on a replica = %v, want ErrUnavailable", err)
			}
			var ro *ReadOnlyError
			if got := errors.As(err, &ro); got == tc.keep {
				t.Fatalf("Register on a replica = %v; ReadOnlyError = %v, want %v", err, got, !tc.keep)
			}
			after := clientID(t, s)
			if tc.keep {
				if after != first {
					t.Fatalf("KeepConnOnReadOnly: connection replaced (id %d, was %d)", after, first)
				}
				if n := s.readOnlyDiscards.Load(); n != 0 {
					t.Fatalf("KeepConnOnReadOnly: %d READONLY discards", n)
				}
				return
			}
			if after == first {
				t.Fatalf("connection %d kept after it answered READONLY", first)
			}
			if n := s.readOnlyDiscards.Load(); n != 1 {
				t.Fatalf("READONLY discards = %d, want 1", n)
			}
			// Reads still work on the replica, on the new connection.
			if _, _, err := s.Resolve(ctx, "doc"); err != nil {
				t.Fatalf("Resolve on a replica: %v", err)
			}
			if got := clientID(t, s); got != after {
				t.Fatalf("a read replaced the connection: id %d, was %d", got, after)
			}
		})
	}
}

// demotedStore returns a store with a single pooled connection, already
// open, to a server that has just become a replica of another, the
// connection's client ID on that server and a context for the test.
func demotedStore(t *testing.T) (*Store, context.Context, int64) {
	t.Helper()
	other := testenv.StartRedis(t)
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{PoolSize: 1})
	first := clientID(t, s)
	r.MustCommand(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(other.Port))
	return s, ctxT(t), first
}

// TestReadOnlyInsideCallbackIsDiscardedEvenIfSwallowed runs a write through
// radix.WithConn whose callback ignores the error: the guard closed the
// connection, so its next use fails and radix discards it then.
func TestReadOnlyInsideCallbackIsDiscardedEvenIfSwallowed(t *testing.T) {
	s, ctx, first := demotedStore(t)
	var writeErr error
	err := s.pool.Do(ctx, radix.WithConn("", func(ctx context.Context, c radix.Conn) error {
		writeErr = c.Do(ctx, radix.Cmd(nil, "SET", "k", "v"))
		return nil
	}))
	if err != nil {
		t.Fatalf("WithConn: %v", err)
	}
	var ro *ReadOnlyError
	if !errors.As(writeErr, &ro) {
		t.Fatalf("SET on a replica inside WithConn = %v, want ReadOnlyError", writeErr)
	}
	// The first command on the closed connection fails; after that the pool
	// has a new one.
	poll.Until(t, 5*time.Second, "a new connection", func() error {
		var id int64
		err := s.do(ctx, radix.Cmd(&id, "CLIENT", "ID"))
		if err == nil && id == first {
			t.Fatalf("the connection that answered READONLY is still in use")
		}
		return err
	})
}

// TestLeaseEndsWhenRedisIsGone kills the server under a live lease: calls fail
// with ErrUnavailable and the lease's Done closes once renewal has failed for
// a TTL.
func TestLeaseEndsWhenRedisIsGone(t *testing.T) {
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{DialTimeout: 200 * time.Millisecond})
	ctx := ctxT(t)
	const ttl = 600 * time.Millisecond
	l, err := s.Register(ctx, "node-a:1", ttl)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	r.Process.Kill()
	if _, _, err := s.Resolve(ctx, "doc"); !errors.Is(err, sessionstore.ErrUnavailable) {
		t.Fatalf("Resolve with Redis gone = %v, want ErrUnavailable", err)
	}
	if _, err := s.Bind(ctx, "doc", l.Member()); !errors.Is(err, sessionstore.ErrUnavailable) {
		t.Fatalf("Bind with Redis gone = %v, want ErrUnavailable", err)
	}
	select {
	case <-l.Done():
	case <-time.After(ttl + 30*time.Second): // a hang guard, not a claim on when
		t.Fatalf("lease Done not closed %v after losing Redis", ttl+30*time.Second)
	}
}

// TestMalformedRecords plants records this code cannot read.
func TestMalformedRecords(t *testing.T) {
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{})
	ctx := ctxT(t)
	l, err := s.Register(ctx, "node-a:1", time.Minute)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	owner := l.Member()
	r.MustCommand(t, "SET", s.bindingKey("string"), "x")
	r.MustCommand(t, "HSET", s.bindingKey("partial"), "addr", owner.Addr)
	r.MustCommand(t, "HSET", s.bindingKey("badepoch"), "addr", owner.Addr,
		"inc", strconv.FormatInt(owner.Incarnation, 10), "epoch", "seven")
	for _, key := range []string{"string", "partial", "badepoch"} {
		if _, _, err := s.Resolve(ctx, key); !errors.Is(err, sessionstore.ErrMalformed) {
			t.Errorf("Resolve(%s) = %v, want ErrMalformed", key, err)
		}
		if _, err := s.Bind(ctx, key, owner); !errors.Is(err, sessionstore.ErrMalformed) {
			t.Errorf("Bind(%s) = %v, want ErrMalformed", key, err)
		}
	}
	if err := s.Release(ctx, sessionstore.Binding{Key: "string", Owner: owner, Epoch: 1}); !errors.Is(err, sessionstore.ErrMalformed) {
		t.Errorf("Release over a string record = %v, want ErrMalformed", err)
	}
	// A member id without an incarnation, whose key exists.
	r.MustCommand(t, "SADD", s.membersKey, "garbage")
	r.MustCommand(t, "SET", s.memberPrefix+"garbage", "1")
	if _, err := s.Members(ctx); !errors.Is(err, sessionstore.ErrMalformed) {
		t.Errorf("Members with a bad member id = %v, want ErrMalformed", err)
	}
}

// TestReadOnlyOnBlockingCommand: radix runs blocking commands on a connection
// of their own, like WithConn; a READONLY answer there replaces it too.
func TestReadOnlyOnBlockingCommand(t *testing.T) {
	s, ctx, first := demotedStore(t)
	err := s.pool.Do(ctx, radix.Cmd(nil, "BRPOPLPUSH", "from", "to", "1"))
	var ro *ReadOnlyError
	if !errors.As(err, &ro) {
		t.Fatalf("BRPOPLPUSH on a replica = %v, want ReadOnlyError", err)
	}
	if got := clientID(t, s); got == first {
		t.Fatalf("connection %d kept after a blocking command met READONLY", first)
	}
}

// TestWaitersAllGetTheConnectionBack holds the only pooled connection while
// many callers wait for it on the shared path. radix wakes one of them when
// the connection comes back; the others must not be left waiting until their
// deadline.
func TestWaitersAllGetTheConnectionBack(t *testing.T) {
	r := testenv.StartRedis(t)
	s := newTestStore(t, r.Addr, Config{PoolSize: 1})
	ctx := ctxT(t)
	release := make(chan struct{})
	held := make(chan struct{})
	holderDone := make(chan error, 1)
	go func() {
		holderDone <- s.pool.Do(ctx, radix.WithConn("", func(context.Context, radix.Conn) error {
			close(held)
			<-release
			return nil
		}))
	}()
	<-held

	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _, err := s.Resolve(ctx, "doc")
			errs <- err
		}()
	}
	// Once this many tries have been withdrawn (each after 50ms of waiting),
	// every caller has long been waiting. Without the withdrawal, radix
	// would wake only one of them and the rest would hit their deadline.
	poll.Until(t, 5*time.Second, "every caller's try withdrawn", func() error {
		if n := s.withdrawnTries.Load(); n < callers {
			return fmt.Errorf("%d tries withdrawn, want %d", n, callers)
		}
		return nil
	})
	close(release)
	if err := <-holderDone; err != nil {
		t.Fatalf("holder: %v", err)
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("Resolve after waiting for the connection: %v", err)
		}
	}
}
