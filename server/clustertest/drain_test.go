package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// withDrain turns on the drain of a shutdown, bounded by d.
func withDrain(d time.Duration) clustertest.Option {
	return clustertest.WithConfig(func(_ int, cfg *server.Config) { cfg.ShutdownDrainTimeout = d })
}

// awaitChangeFrom reads a Watch stream, skipping initializations (a stream
// that followed its document to a new owner sends one again) and other
// events, until publisher's DOCUMENT_CHANGED arrives; it fails t if the
// stream ends first.
func awaitChangeFrom(t *testing.T, s *wire.Stream[api.WatchResponse], publisher string) {
	t.Helper()
	for {
		m := s.Next(t)
		ev := m.GetEvent().GetDocEvent().GetEvent()
		if ev.GetType() == changed && ev.GetPublisher() == publisher && m.GetEvent() != nil {
			return
		}
	}
}

// awaitMoved reads a Watch stream until the initialization of the
// document's new owner arrives: only then is the stream subscribed there, so
// a change pushed after it reaches the stream as that publisher's own event
// (a change pushed while the stream moved arrives as the follow-up changed
// event, without its publisher).
func awaitMoved(t *testing.T, s *wire.Stream[api.WatchResponse]) {
	t.Helper()
	for s.Next(t).GetInitialization() == nil {
	}
}

// converge has every replica sync and checks that each has every other's
// acknowledged changes and that the log holds each change once.
func converge(t *testing.T, c *clustertest.Cluster, docID string, rs ...*wire.Replica) {
	t.Helper()
	for i, r := range rs {
		syncUntilAcked(r, fmt.Sprintf("client %d syncs", i))
	}
	for _, r := range rs {
		r.MustPushPull()
		for _, other := range rs {
			if other != r {
				require.NoError(t, hasPulled(r, other))
			}
		}
	}
	checkStored(t, checkLog(t, c.DB(), docID), rs...)
}

// TestDrainHandsDocumentsOn drains a document's owner while a client on
// each node edits and watches it: the binding moves to another node with a
// larger epoch, the next owner has the document built before that (and
// builds it no more), every client syncs on without an error (the client on the
// draining node through it, relayed), every Watch stream stays open and
// reports the others' changes, and nothing is lost or stored twice.
func TestDrainHandsDocumentsOn(t *testing.T) {
	c := clustertest.Start(t, 3, withDrain(time.Minute))
	f := newMoveFixture(t, c)
	drained := f.owner.Node
	built := make([]int64, len(c.Nodes()))
	for i, n := range c.Nodes() {
		built[i] = n.Server().Backend().Metrics().DocumentsBuilt.Load()
	}

	require.NoError(t, drained.Server().Drain(wire.Context(t)))
	require.Empty(t, drained.Affinity().Owned(), "documents left on the drained node")
	owner := ownerOf(t, c, f.docKey)
	require.NotEqual(t, drained, owner.Node, "the drained node still owns the document")
	require.Greater(t, owner.Binding.Epoch, f.owner.Binding.Epoch, "the handoff must bind with a larger epoch")
	// The next owner built the document when asked to warm it, before the
	// binding moved, and no call it served since built it again.
	m := owner.Node.Server().Backend().Metrics()
	require.EqualValues(t, 1, m.DocumentsWarmed.Load(), "the next owner was not asked to build the document")
	require.Equal(t, built[owner.Node.Index()]+1, m.DocumentsBuilt.Load())

	for _, w := range append([]*wire.Stream[api.WatchResponse]{f.nearW}, f.farW...) {
		awaitMoved(t, w)
	}
	// The draining node still serves its client, relaying to the new owner.
	f.near.Edit(2)
	f.near.MustPushPull()
	for _, w := range f.farW {
		awaitChangeFrom(t, w, f.near.ID)
	}
	f.far[0].Edit(1)
	f.far[0].MustPushPull()
	awaitChangeFrom(t, f.nearW, f.far[0].ID)
	for _, w := range f.farW[1:] {
		awaitChangeFrom(t, w, f.far[0].ID)
	}
	converge(t, c, f.near.DocID, f.all()...)
	require.Equal(t, built[owner.Node.Index()]+1, m.DocumentsBuilt.Load(), "a call at the next owner built the document again")

	c.Stop(drained.Index())
	require.Equal(t, owner.Node, ownerOf(t, c, f.docKey).Node, "the stop moved the handed-on document again")
	for i, w := range f.farW {
		select {
		case <-w.Done():
			t.Fatalf("watch stream %d of a client on a node that stays ended: %v", i, w.Err())
		default:
		}
	}
}

// TestDrainInRedirectModeRelays drains the owner in redirect mode: a client
// that still calls it is answered, not refused, and the answer names the new
// owner.
func TestDrainInRedirectModeRelays(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithMode(routing.Redirect), withDrain(time.Minute))
	key := wire.UniqueKey(t, "doc")
	_, err := c.Node(0).Affinity().Owner(wire.Context(t), key)
	require.NoError(t, err)
	old := ownerOf(t, c, key)
	r := wire.NewReplica(t, old.Node.ConnectJSON())
	r.MustAttach(key)
	w, _ := watchReady(t, r)
	r.Edit(2)
	r.MustPushPull()

	require.NoError(t, old.Node.Server().Drain(wire.Context(t)))
	owner := ownerOf(t, c, key)
	require.NotEqual(t, old.Node, owner.Node)
	awaitMoved(t, w)

	r.Edit(2)
	resp, err := old.Node.ConnectJSON().PushPullChanges(wire.Context(t), r.PushPullRequest())
	require.NoError(t, err, "a draining node refused a call in redirect mode")
	require.Equal(t, owner.Node.SessionKey(), resp.Header().Get(routing.DefaultSessionKeyHeader),
		"the draining node's answer must name the new owner")
	require.NoError(t, r.Absorb(resp.Msg.GetChangePack()))

	other := wire.NewReplica(t, owner.Node.ConnectJSON())
	other.MustAttach(key)
	other.Edit(1)
	other.MustPushPull()
	awaitChangeFrom(t, w, other.ID)
	converge(t, c, r.DocID, r, other)
}

// drainFixture binds docs documents to node 0 and has a client on node 2
// edit each.
func drainFixture(t *testing.T, c *clustertest.Cluster, docs int) []*wire.Replica {
	t.Helper()
	var rs []*wire.Replica
	for len(rs) < docs {
		key := wire.UniqueKey(t, "doc")
		if _, err := c.Node(0).Affinity().Owner(wire.Context(t), key); err != nil {
			t.Fatal(err)
		}
		if ownerOf(t, c, key).Node != c.Node(0) {
			continue
		}
		r := wire.NewReplica(t, c.Node(2).ConnectJSON())
		r.MustAttach(key)
		r.Edit(3)
		r.MustPushPull()
		rs = append(rs, r)
	}
	return rs
}

// checkEnd checks that every document of rs has one live owner among the
// running nodes, and that every change each client made is stored once.
func checkEnd(t *testing.T, c *clustertest.Cluster, rs []*wire.Replica) {
	t.Helper()
	for i, r := range rs {
		r.Edit(1)
		syncUntilAcked(r, fmt.Sprintf("client %d syncs after the drain", i))
		o := ownerOf(t, c, r.DocKey)
		require.True(t, o.Node.Running(), "document %d owned by a node that is not running", i)
		checkStored(t, checkLog(t, c.DB(), r.DocID), r)
	}
}

// TestDrainWhileNextOwnerCrashes crashes a node just before another drains:
// the crashed node is still a member until its lease runs out, so some
// documents are handed to it; once its lease ends they move to the survivor
// and no acknowledged change is lost.
func TestDrainWhileNextOwnerCrashes(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Second), withDrain(time.Minute))
	rs := drainFixture(t, c, 6)
	c.Abort(1)
	ctx, cancel := context.WithTimeout(wire.Context(t), 30*time.Second)
	defer cancel()
	require.NoError(t, c.Node(0).Server().Drain(ctx))
	c.Stop(0)
	checkEnd(t, c, rs)
}

// TestShutdownTwice shuts a node down twice at once and cuts its drain short,
// as a second SIGTERM does: both calls return, and the documents end with
// one owner and nothing lost.
func TestShutdownTwice(t *testing.T) {
	c := clustertest.Start(t, 3, withDrain(time.Minute))
	rs := drainFixture(t, c, 6)
	srv := c.Node(0).Server()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- srv.Shutdown(context.Background()) }()
	}
	srv.SkipDrain()
	first, second := <-errs, <-errs
	require.Equal(t, first, second, "two shutdowns ended differently")
	require.NoError(t, first)
	checkEnd(t, c, rs)
}

// TestDrainBoundRunsOut ends a drain before it could hand anything on: it
// says so, the documents stay owned until the stop releases them as before,
// and the survivors take them over with nothing lost.
func TestDrainBoundRunsOut(t *testing.T) {
	c := clustertest.Start(t, 3)
	rs := drainFixture(t, c, 4)
	ctx, cancel := context.WithCancel(wire.Context(t))
	cancel()
	err := c.Node(0).Server().Drain(ctx)
	require.ErrorIs(t, err, server.ErrDrainIncomplete)
	require.Len(t, c.Node(0).Affinity().Owned(), len(rs))
	c.Stop(0)
	checkEnd(t, c, rs)
}

// TestDrainOfPartitionedNode drains a node cut off the session store: it
// can hand nothing on, and it lost its lease, so the drain ends; the
// survivors take its documents over, and its late writes are fenced.
func TestDrainOfPartitionedNode(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Second))
	rs := drainFixture(t, c, 4)
	c.Partition(0)
	ctx, cancel := context.WithTimeout(wire.Context(t), 5*time.Second)
	defer cancel()
	if err := c.Node(0).Server().Drain(ctx); err != nil {
		require.ErrorIs(t, err, server.ErrDrainIncomplete)
	}
	checkEnd(t, c, rs)
	c.Abort(0)
}

// TestDrainNodeCall drains a node through the AdminService of another one,
// as `yorkie drain <node>` does: the named node hands its documents on and
// keeps running (readiness draining); an unknown node, a call without
// credentials and one of an account other than the server's admin are
// refused and drain nothing.
func TestDrainNodeCall(t *testing.T) {
	c := clustertest.Start(t, 3)
	rs := drainFixture(t, c, 3)
	ctx := wire.Context(t)
	a := adminOf(c.Node(1))
	in, err := a.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "admin", Password: "admin"}))
	require.NoError(t, err)
	call := func(node string) (*connect.Response[api.DrainNodeResponse], error) {
		req := connect.NewRequest(&api.DrainNodeRequest{Node: node})
		req.Header().Set("Authorization", "Bearer "+in.Msg.Token)
		return a.DrainNode(ctx, req)
	}

	_, err = call("127.0.0.1:1")
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "unknown node: %v", err)
	_, err = a.DrainNode(ctx, connect.NewRequest(&api.DrainNodeRequest{Node: c.Node(0).Addr()}))
	require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "no credentials: %v", err)
	// Another account, signed up and logged in: a node belongs to the
	// server's admin, not to a project's owner.
	_, err = a.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "ada", Password: "s3cret-pw!"}))
	require.NoError(t, err)
	ada, err := a.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: "ada", Password: "s3cret-pw!"}))
	require.NoError(t, err)
	req := connect.NewRequest(&api.DrainNodeRequest{Node: c.Node(0).Addr()})
	req.Header().Set("Authorization", "Bearer "+ada.Msg.Token)
	_, err = a.DrainNode(ctx, req)
	require.Equal(t, connect.CodePermissionDenied, connect.CodeOf(err), "another account: %v", err)
	require.Equal(t, "ErrPermissionDenied", wire.ErrorInfo(err)["code"], "another account: %v", err)
	require.Len(t, c.Node(0).Affinity().Owned(), len(rs), "a refused call drained the node")
	require.False(t, c.Node(0).Affinity().Draining(), "a refused call set the node draining")

	resp, err := call(c.Node(0).Addr())
	require.NoError(t, err)
	require.Equal(t, c.Node(0).Addr(), resp.Msg.GetNode())
	require.Zero(t, resp.Msg.GetDocumentsLeft())
	require.Empty(t, c.Node(0).Affinity().Owned())
	require.True(t, c.Node(0).Running())
	checkEnd(t, c, rs)
}

// TestDrainAllAtOnce drains every node together, as stopping a whole
// deployment does: the nodes hand documents to each other, but none hands on
// a document that came back, so every drain ends; the stops release the
// rest and nothing is lost.
func TestDrainAllAtOnce(t *testing.T) {
	c := clustertest.Start(t, 3)
	rs := drainFixture(t, c, 6)
	errs := make(chan error, 3)
	for _, n := range c.Nodes() {
		go func() { errs <- n.Server().Drain(wire.Context(t)) }()
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	c.Stop(0)
	c.Stop(1)
	c.Add()
	for _, r := range rs {
		r.C = c.Node(3).ConnectJSON()
	}
	checkEnd(t, c, rs)
}

// TestDrainMovesChannelSessions drains the owner of a channel group with a
// client of the group on every node, each watching the root channel: the
// sessions move to the next owner with the binding, so no watcher ever sees
// the count leave 3 (every stream follows and is initialized there with
// 3, before any heartbeat), and a client joining afterwards makes it 4.
func TestDrainMovesChannelSessions(t *testing.T) {
	c := clustertest.Start(t, 3, withDrain(time.Minute))
	root := wire.UniqueKey(t, "room")
	clients := make([]*channelClient, 3)
	for i, key := range []string{root, root + ".a", root + ".b"} {
		clients[i] = &channelClient{r: wire.NewReplica(t, c.Node(i).ConnectJSON()), key: key}
		clients[i].attach(t)
	}
	watchers := make([]*wire.Stream[api.WatchResponse], 3)
	for i, cc := range clients {
		watchers[i] = watchChannel(t, cc.r.C, cc.r.ID, root)
		awaitCount(t, watchers[i], 3)
	}
	old := ownerOf(t, c, channel.RoutingKey(root))

	require.NoError(t, old.Node.Server().Drain(wire.Context(t)))
	now := ownerOf(t, c, channel.RoutingKey(root))
	require.NotEqual(t, old.Node, now.Node, "the drained node still owns the channel group")
	require.Greater(t, now.Binding.Epoch, old.Binding.Epoch)
	// Counted at the next owner before any heartbeat reached it.
	for i := range 3 {
		resp, err := c.Node(i).ConnectJSON().PeekChannel(wire.Context(t), connect.NewRequest(&api.PeekChannelRequest{ChannelKey: root}))
		require.NoError(t, err, "peek through node %d", i)
		require.EqualValues(t, 3, resp.Msg.GetSessionCount(), "peek through node %d", i)
	}

	// Every stream follows: the next owner initializes it with 3.
	for i, w := range watchers {
		for {
			m := w.Next(t)
			if in := m.GetInitialization(); in != nil {
				require.EqualValues(t, 3, in.GetResourceInits()[0].GetChannelInit().GetSessionCount(), "watcher %d re-initialized", i)
				break
			}
			require.EqualValues(t, 3, m.GetEvent().GetChannelEvent().GetEvent().GetSessionCount(), "watcher %d", i)
		}
	}
	// Heartbeats keep the moved sessions (no new ones), and a newcomer is
	// the fourth: the next count every watcher sees is 4.
	for i, cc := range clients {
		require.NoError(t, cc.refresh(wire.Context(t)), "heartbeat of client %d", i)
	}
	late := &channelClient{r: wire.NewReplica(t, now.Node.ConnectJSON()), key: root + ".late"}
	late.attach(t)
	for i, w := range watchers {
		awaitCountFrom(t, w, 3, 4, fmt.Sprintf("watcher %d", i))
	}
	// A client's detach at the next owner ends its moved session.
	_, err := clients[0].r.C.DetachChannel(wire.Context(t), connect.NewRequest(&api.DetachChannelRequest{
		ClientId: clients[0].r.ID, ChannelKey: clients[0].key, SessionId: clients[0].session,
	}))
	require.NoError(t, err)
	for i, w := range watchers {
		awaitCountFrom(t, w, 4, 3, fmt.Sprintf("watcher %d", i))
	}
}

// awaitCountFrom reads a channel Watch until its count is want; every count
// before it must be from (a count is announced again after an
// initialization).
func awaitCountFrom(t *testing.T, s *wire.Stream[api.WatchResponse], from, want int64, what string) {
	t.Helper()
	for {
		m := s.Next(t)
		n := m.GetEvent().GetChannelEvent().GetEvent().GetSessionCount()
		if n == want {
			return
		}
		require.Equal(t, from, n, "%s: %v", what, m)
	}
}

// TestHandoffCallsRefuseBadInput: the successor's side of a handoff
// (ClusterService WarmDocument and ImportChannelSessions, with the cluster
// secret) refuses malformed input, an unknown document, and sessions of a
// group the node does not own, and changes no count.
func TestHandoffCallsRefuseBadInput(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	room := wire.UniqueKey(t, "room")
	member := &channelClient{r: wire.NewReplica(t, c.Node(0).ConnectJSON()), key: room}
	member.attach(t)
	owner := ownerOf(t, c, channel.RoutingKey(room)).Node
	other := otherNodes(c, owner)[0]
	secret, err := c.Store().ClusterSecret(ctx)
	require.NoError(t, err)
	clusterOf := func(n *clustertest.Node) clusterv1connect.ClusterServiceClient { return clusterClient(t, n, secret) }
	session := func(id, key, client string) *clusterv1.ChannelSession {
		return &clusterv1.ChannelSession{SessionId: id, ChannelKey: key, ClientId: client, TtlMs: 60000}
	}
	good := session("0123456789abcdef01234567", room+".x", "00112233445566778899aabb")
	for name, tc := range map[string]struct {
		node *clustertest.Node
		req  *clusterv1.ImportChannelSessionsRequest
		code connect.Code
	}{
		"group owned elsewhere":      {other, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room, Sessions: []*clusterv1.ChannelSession{good}}, connect.CodeUnavailable},
		"group not a first key path": {owner, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room + ".x", Sessions: []*clusterv1.ChannelSession{good}}, connect.CodeInvalidArgument},
		"session of another group":   {owner, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room, Sessions: []*clusterv1.ChannelSession{good, session("0123456789abcdef01234568", "elsewhere", "00112233445566778899aabc")}}, connect.CodeInvalidArgument},
		"malformed session ID":       {owner, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room, Sessions: []*clusterv1.ChannelSession{good, session("nope", room, "00112233445566778899aabc")}}, connect.CodeInvalidArgument},
		"malformed client ID":        {owner, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room, Sessions: []*clusterv1.ChannelSession{good, session("0123456789abcdef01234568", room, "XYZ")}}, connect.CodeInvalidArgument},
		"no time to live":            {owner, &clusterv1.ImportChannelSessionsRequest{ChannelGroup: room, Sessions: []*clusterv1.ChannelSession{good, {SessionId: "0123456789abcdef01234568", ChannelKey: room, ClientId: "00112233445566778899aabc"}}}, connect.CodeInvalidArgument},
	} {
		tc.req.ProjectId = database.DefaultProjectID
		_, err := clusterOf(tc.node).ImportChannelSessions(ctx, connect.NewRequest(tc.req))
		require.Equal(t, tc.code, connect.CodeOf(err), "%s: %v", name, err)
	}
	resp, err := c.Node(0).ConnectJSON().PeekChannel(ctx, connect.NewRequest(&api.PeekChannelRequest{ChannelKey: room}))
	require.NoError(t, err)
	require.EqualValues(t, 1, resp.Msg.GetSessionCount(), "a refused import changed the count")

	warm := func(projectID, docID string) error {
		_, err := clusterOf(other).WarmDocument(ctx, connect.NewRequest(&clusterv1.WarmDocumentRequest{ProjectId: projectID, DocumentId: docID}))
		return err
	}
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(warm(database.DefaultProjectID, "")), "no document ID")
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(warm(database.DefaultProjectID, "000000000000000000000000")), "unknown document")
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(warm("000000000000000000000000", "000000000000000000000000")), "unknown project")
	require.Zero(t, other.Server().Backend().Metrics().DocumentsWarmed.Load())
}
