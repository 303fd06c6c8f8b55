package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// The tests of a channel group's sessions in the instant a draining owner
// hands the group on: between the binding's move and the release of the
// group there, the sessions are copied to the next owner, and attaches and
// detaches go on meanwhile. Keys are of the default project, whose scoped
// keys are the keys themselves.

// groupSessions returns the IDs of the sessions of channel group first on
// node n, sorted.
func groupSessions(n *clustertest.Node, first string) []string {
	var ids []string
	for _, s := range n.Server().Channels().GroupSessions(first) {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// requireGroup checks that node n holds exactly the sessions want of
// channel group root, and that every node answers the count of root as
// their number.
func requireGroup(t *testing.T, c *clustertest.Cluster, n *clustertest.Node, root string, want ...string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	require.Equal(t, want, groupSessions(n, root), "sessions at the owner")
	for _, node := range c.Running() {
		resp, err := node.ConnectJSON().PeekChannel(wire.Context(t), connect.NewRequest(&api.PeekChannelRequest{ChannelKey: root}))
		require.NoError(t, err, "peek through node %d", node.Index())
		require.EqualValues(t, len(want), resp.Msg.GetSessionCount(), "count through node %d", node.Index())
	}
}

// detach ends cc's session through client via.
func (cc *channelClient) detachVia(ctx context.Context, via *clustertest.Node) error {
	_, err := via.ConnectJSON().DetachChannel(ctx, connect.NewRequest(&api.DetachChannelRequest{
		ClientId: cc.r.ID, ChannelKey: cc.key, SessionId: cc.session,
	}))
	return err
}

// attachVia gives cc a session through node via.
func (cc *channelClient) attachVia(ctx context.Context, via *clustertest.Node) error {
	resp, err := via.ConnectJSON().AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: cc.r.ID, ChannelKey: cc.key}))
	if err != nil {
		return err
	}
	cc.session = resp.Msg.GetSessionId()
	return nil
}

// TestChannelChangesReachingTheDrainingOwnerDuringTheCopy: while the next
// owner takes the copy of a group's sessions (its store lookup is held, so
// the draining owner is between the copy and the release), a detach and an
// attach reach the draining owner and a heartbeat reaches the next owner
// ahead of the copy. Right after the drain the next owner holds exactly the
// sessions that live: the detached one is not brought back by the copy, the
// new one is there, and the refreshed one is counted once.
func TestChannelChangesReachingTheDrainingOwnerDuringTheCopy(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	root := wire.UniqueKey(t, "room")
	stay := &channelClient{r: wire.NewReplica(t, c.Node(0).ConnectJSON()), key: root + ".a"}
	stay.attach(t)
	old := ownerOf(t, c, channel.RoutingKey(root)).Node
	leave := &channelClient{r: wire.NewReplica(t, c.Node(1).ConnectJSON()), key: root + ".b"}
	leave.attach(t)
	nextAddr, err := old.Affinity().Successor(channel.RoutingKey(root))
	require.NoError(t, err)
	var next *clustertest.Node
	for _, n := range c.Running() {
		if n.Addr() == nextAddr {
			next = n
		}
	}
	require.NotNil(t, next)
	join := &channelClient{r: wire.NewReplica(t, c.Node(2).ConnectJSON()), key: root + ".c"}
	requireGroup(t, c, old, root, stay.session, leave.session)

	arrived, release := next.HoldResolve(channel.RoutingKey(root))
	defer release()
	drained := make(chan error, 1)
	go func() { drained <- old.Server().Drain(ctx) }()
	select {
	case <-arrived:
	case err := <-drained:
		t.Fatalf("the drain ended before the next owner took the sessions: %v", err)
	}
	// The binding has moved and the sessions are copied; the release waits
	// for the next owner to take them.
	require.NoError(t, leave.detachVia(ctx, old), "detach through the draining owner")
	require.NoError(t, join.attachVia(ctx, old), "attach through the draining owner")
	require.NoError(t, stay.refresh(ctx), "heartbeat ahead of the copy")
	release()
	require.NoError(t, <-drained)

	now := ownerOf(t, c, channel.RoutingKey(root)).Node
	require.Equal(t, next, now, "the group moved to the successor")
	requireGroup(t, c, now, root, stay.session, join.session)
	require.Empty(t, groupSessions(old, root), "sessions left at the drained node")
}

// heldDB holds a node's lookups of the clients named in its hold until the
// test releases them: a call that has been routed to this node, as owner,
// waits there before it is served.
type heldDB struct {
	database.Database
	hold *clientHold
}

func (d heldDB) FindClient(ctx context.Context, projectID, clientID string) (*database.ClientInfo, error) {
	if err := d.hold.wait(ctx, clientID); err != nil {
		return nil, err
	}
	return d.Database.FindClient(ctx, projectID, clientID)
}

type clientHold struct {
	mu       sync.Mutex
	arrived  map[string]chan struct{}
	released chan struct{}
}

// arm holds the next lookup of each of ids; the returned channels close as
// they begin, release lets them go.
func (h *clientHold) arm(ids ...string) (arrived []<-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrived = map[string]chan struct{}{}
	h.released = make(chan struct{})
	for _, id := range ids {
		ch := make(chan struct{})
		h.arrived[id] = ch
		arrived = append(arrived, ch)
	}
	released := h.released
	var once sync.Once
	return arrived, func() { once.Do(func() { close(released) }) }
}

func (h *clientHold) wait(ctx context.Context, clientID string) error {
	h.mu.Lock()
	ch, ok := h.arrived[clientID]
	delete(h.arrived, clientID)
	released := h.released
	h.mu.Unlock()
	if !ok {
		return nil
	}
	close(ch)
	select {
	case <-released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestChannelChangesRoutedHereBeforeTheHandOff: a detach and an attach are
// routed to a group's owner (it owns the group then) and wait there, before
// they are served, while the owner drains; they go on once the sessions
// are copied and the group released. They are made at the next owner, not
// here: right after the drain it holds exactly the sessions that live.
// The group reached its owner from an earlier drain, as in a rolling
// restart, so the owner has never served the clients and looks them up.
func TestChannelChangesRoutedHereBeforeTheHandOff(t *testing.T) {
	holds := make([]*clientHold, 3)
	c := clustertest.Start(t, 3, withDrain(time.Minute), clustertest.WithConfig(func(i int, cfg *server.Config) {
		holds[i] = &clientHold{}
		cfg.DB = heldDB{Database: cfg.DB, hold: holds[i]}
	}))
	ctx := wire.Context(t)
	root := wire.UniqueKey(t, "room")
	stay := &channelClient{r: wire.NewReplica(t, c.Node(0).ConnectJSON()), key: root + ".a"}
	stay.attach(t)
	first := ownerOf(t, c, channel.RoutingKey(root)).Node
	leave := &channelClient{r: wire.NewReplica(t, first.ConnectJSON()), key: root + ".b"}
	leave.attach(t)
	c.Stop(first.Index())
	owner := ownerOf(t, c, channel.RoutingKey(root)).Node
	require.NotEqual(t, first, owner)
	requireGroup(t, c, owner, root, stay.session, leave.session)
	other := otherNodes(c, owner)[0]
	join := &channelClient{r: wire.NewReplica(t, other.ConnectJSON()), key: root + ".c"}

	arrived, release := holds[owner.Index()].arm(leave.r.ID, join.r.ID)
	defer release()
	calls := make(chan error, 2)
	go func() { calls <- leave.detachVia(ctx, owner) }()
	go func() { calls <- join.attachVia(ctx, owner) }()
	for _, a := range arrived {
		<-a
	}
	require.NoError(t, owner.Server().Drain(ctx))
	release()
	for range 2 {
		require.NoError(t, <-calls)
	}

	now := ownerOf(t, c, channel.RoutingKey(root)).Node
	require.Equal(t, other, now, "the group moved to the last other node")
	requireGroup(t, c, now, root, stay.session, join.session)
	require.Empty(t, groupSessions(owner, root), "sessions left at the drained node")
}

// countLog is what one channel watcher saw, read as the SDK reads it: an
// initialization sets the count, a presence event with a newer sequence
// number replaces it.
type countLog struct {
	mu      sync.Mutex
	seen    []int64
	latest  int64
	seq     int64
	err     error
	changed chan struct{}
}

// read follows s until it ends.
func (l *countLog) read(s *wire.Stream[api.WatchResponse]) {
	for {
		m, err := s.NextWithin(wire.WaitTimeout)
		l.mu.Lock()
		if err != nil {
			l.err = err
			close(l.changed)
			l.mu.Unlock()
			return
		}
		if ci := m.GetInitialization(); ci != nil {
			in := ci.GetResourceInits()[0].GetChannelInit()
			l.latest, l.seq = in.GetSessionCount(), in.GetSeq()
			l.seen = append(l.seen, l.latest)
		} else if ev := m.GetEvent().GetChannelEvent().GetEvent(); ev.GetType() == api.ChannelEvent_TYPE_PRESENCE && ev.GetSeq() > l.seq {
			l.latest, l.seq = ev.GetSessionCount(), ev.GetSeq()
			l.seen = append(l.seen, l.latest)
		}
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

// await waits until the latest count is want.
func (l *countLog) await(t *testing.T, want int64, what string) {
	t.Helper()
	timeout := time.NewTimer(wire.WaitTimeout)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		latest, err, changed := l.latest, l.err, l.changed
		l.mu.Unlock()
		if latest == want {
			return
		}
		require.NoError(t, err, "%s: the stream ended at %d, want %d", what, latest, want)
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%s: count %d, want %d", what, latest, want)
		}
	}
}

// TestChannelCountsThroughADrainWithChurn: a channel group's owner drains
// while clients keep attaching (a new sub-channel each time) and detaching
// through every node. Watchers on every node (their streams follow the
// group) never see the count below the clients that stay nor above them
// plus the clients churning, no call fails, and once the churn ends every
// count is back to the clients that stay, with exactly their sessions at
// the next owner.
func TestChannelCountsThroughADrainWithChurn(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := wire.Context(t)
	root := wire.UniqueKey(t, "room")
	const churners = 2
	var stay []*channelClient
	var ids []string
	logs := make([]*countLog, 3)
	for i := range 3 {
		cc := &channelClient{r: wire.NewReplica(t, c.Node(i).ConnectJSON()), key: fmt.Sprintf("%s.s%d", root, i)}
		cc.attach(t)
		stay = append(stay, cc)
		ids = append(ids, cc.session)
	}
	for i, cc := range stay {
		w := watchChannel(t, cc.r.C, cc.r.ID, root)
		awaitCount(t, w, 3)
		logs[i] = &countLog{latest: 3, changed: make(chan struct{})}
		go logs[i].read(w)
		defer w.Close()
	}
	old := ownerOf(t, c, channel.RoutingKey(root)).Node

	// Each churner attaches and detaches, going round the nodes, and
	// reports every cycle done.
	stop := make(chan struct{})
	cycles := make(chan int, 1024)
	errs := make(chan error, churners)
	for j := range churners {
		cc := &channelClient{r: wire.NewReplica(t, c.Node(j).ConnectJSON())}
		go func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				cc.key = fmt.Sprintf("%s.c%d-%d", root, j, n)
				if err := cc.attachVia(ctx, c.Node(n%3)); err != nil {
					errs <- fmt.Errorf("churner %d attach %d: %w", j, n, err)
					return
				}
				if err := cc.detachVia(ctx, c.Node((n+1)%3)); err != nil {
					errs <- fmt.Errorf("churner %d detach %d: %w", j, n, err)
					return
				}
				select {
				case cycles <- j:
				case <-stop:
				}
			}
		}()
	}
	awaitCycles := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-cycles:
			case err := <-errs:
				t.Fatal(err)
			}
		}
	}
	awaitCycles(2 * churners)
	require.NoError(t, old.Server().Drain(ctx))
	awaitCycles(2 * churners)
	close(stop)
	for range churners {
		require.NoError(t, <-errs)
	}

	now := ownerOf(t, c, channel.RoutingKey(root)).Node
	require.NotEqual(t, old, now)
	for i, l := range logs {
		l.await(t, 3, fmt.Sprintf("watcher %d", i))
		l.mu.Lock()
		for _, n := range l.seen {
			require.True(t, n >= 3 && n <= 3+churners, "watcher %d saw %d: %v", i, n, l.seen)
		}
		l.mu.Unlock()
	}
	requireGroup(t, c, now, root, ids...)
}
