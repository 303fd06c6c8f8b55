package clustertest_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// sessionKeyHeader is the response header naming a document's owner.
const sessionKeyHeader = "x-session-key"

// retryable reports whether a client (the SDK) would send the call again.
func retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeUnavailable, connect.CodeUnknown, connect.CodeCanceled, connect.CodeResourceExhausted:
		return true
	}
	return false
}

// syncUntilAcked retries PushPull, as the SDK does on retryable errors,
// until every change of r is acknowledged; it fails t on a non-retryable
// error.
func syncUntilAcked(r *wire.Replica, what string) {
	r.T.Helper()
	poll.Until(r.T, wire.WaitTimeout, what, func() error {
		_, err := r.PushPull(wire.Context(r.T))
		if err != nil && !retryable(err) {
			r.T.Fatalf("%s: non-retryable error: %v", what, err)
		}
		if err == nil && len(r.Pending) > 0 {
			return fmt.Errorf("%d changes still unacknowledged", len(r.Pending))
		}
		return err
	})
}

// hasPulled reports whether r received every change of other (operation and
// presence changes alike) up to other's acknowledged seq.
func hasPulled(r, other *wire.Replica) error {
	for seq := uint32(1); seq <= other.Acked; seq++ {
		k := fmt.Sprintf("%s/%d", other.ID, seq)
		if _, ok := r.Pulled[k]; !ok {
			return fmt.Errorf("client %s has not received change %s", r.ID, k)
		}
	}
	return nil
}

// watchReady opens r's Watch stream and waits for its initialization,
// returning the clients it lists as watching.
func watchReady(t testing.TB, r *wire.Replica) (*wire.Stream[api.WatchResponse], []string) {
	t.Helper()
	s := r.Watch(t)
	init := s.Next(t).GetInitialization()
	if init == nil {
		t.Fatalf("first Watch message of %s is not an initialization", r.ID)
	}
	return s, init.GetResourceInits()[0].GetDocumentInit().GetClientIds()
}

// docEvent returns the next document event of a Watch stream.
func nextDocEvent(t testing.TB, s *wire.Stream[api.WatchResponse]) *api.DocEvent {
	t.Helper()
	m := s.Next(t)
	ev := m.GetEvent().GetDocEvent().GetEvent()
	if ev == nil {
		t.Fatalf("got Watch message %v, want a document event", m)
	}
	return ev
}

// awaitEvent reads a Watch stream until an event of the type from the
// publisher arrives, skipping others, or fails t.
func awaitEvent(t testing.TB, s *wire.Stream[api.WatchResponse], typ api.DocEventType, publisher string) {
	t.Helper()
	for {
		ev := nextDocEvent(t, s)
		if ev.GetType() == typ && ev.GetPublisher() == publisher {
			return
		}
	}
}

// findEvent reads a Watch stream until an event of the type from the
// publisher arrives, skipping others; it returns an error if none comes
// within d or the stream ends first.
func findEvent(s *wire.Stream[api.WatchResponse], typ api.DocEventType, publisher string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		m, err := s.NextWithin(time.Until(deadline))
		if err != nil {
			return fmt.Errorf("no %s from %s: %w", typ, publisher, err)
		}
		ev := m.GetEvent().GetDocEvent().GetEvent()
		if ev.GetType() == typ && ev.GetPublisher() == publisher {
			return nil
		}
	}
}

// checkLog reads the document's change log from the shared database and
// fails t unless its server_seq values run 1..n without gap or duplicate
// and no change of a client is stored twice. It returns the log by change key.
func checkLog(t testing.TB, db database.Database, docID string) map[string]*database.Change {
	t.Helper()
	changes, err := db.FindChanges(wire.Context(t), docID, 1, math.MaxInt64)
	wire.Must(t, err, "read change log")
	byKey := make(map[string]*database.Change, len(changes))
	for i, ch := range changes {
		if ch.ServerSeq != int64(i+1) {
			t.Fatalf("change log of %s: entry %d has server_seq %d, want %d", docID, i, ch.ServerSeq, i+1)
		}
		k := fmt.Sprintf("%s/%d", ch.ActorID, ch.ClientSeq)
		if prev, ok := byKey[k]; ok {
			t.Fatalf("change log of %s: change %s stored twice, at %d and %d", docID, k, prev.ServerSeq, ch.ServerSeq)
		}
		byKey[k] = ch
	}
	return byKey
}

// checkStored fails t unless every acknowledged change of each replica is in
// the log.
func checkStored(t testing.TB, log map[string]*database.Change, replicas ...*wire.Replica) {
	t.Helper()
	for _, r := range replicas {
		for seq := uint32(1); seq <= r.Acked; seq++ {
			if _, ok := log[fmt.Sprintf("%s/%d", r.ID, seq)]; !ok {
				t.Fatalf("acknowledged change %s/%d of client %s is not in the log", r.ID, seq, r.ID)
			}
		}
	}
}

// otherNodes returns the running nodes other than the ones excluded.
func otherNodes(c *clustertest.Cluster, exclude ...*clustertest.Node) []*clustertest.Node {
	var out []*clustertest.Node
next:
	for _, n := range c.Running() {
		for _, x := range exclude {
			if n == x {
				continue next
			}
		}
		out = append(out, n)
	}
	return out
}

// ownerOf returns the document's owner, failing t if it has none.
func ownerOf(t testing.TB, c *clustertest.Cluster, docKey string) clustertest.Owner {
	t.Helper()
	o, err := c.OwnerOf(wire.Context(t), docKey)
	wire.Must(t, err, "owner of "+docKey)
	return o
}

// clusterClient is a ClusterService client of n that sends secret with
// every call as nodes do among themselves ("": none, as a stranger would).
func clusterClient(t *testing.T, n *clustertest.Node, secret string) clusterv1connect.ClusterServiceClient {
	t.Helper()
	return clusterv1connect.NewClusterServiceClient(servertest.HTTPClient(t, servertest.ConnectProto), n.URL(), connect.WithInterceptors(secretHeader(secret)))
}

// secretHeader sends secret as the cluster secret with every call (""
// sends none).
func secretHeader(secret string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if secret != "" {
				req.Header().Set(routing.HeaderSecret, secret)
			}
			return next(ctx, req)
		}
	})
}
