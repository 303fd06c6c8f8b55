package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// channelClient is one client of a channel, talking to one node.
type channelClient struct {
	r       *wire.Replica
	key     string
	session string
}

func (cc *channelClient) attach(t *testing.T) {
	t.Helper()
	resp, err := cc.r.C.AttachChannel(wire.Context(t), connect.NewRequest(&api.AttachChannelRequest{ClientId: cc.r.ID, ChannelKey: cc.key}))
	if err != nil {
		t.Fatalf("attach %s to %s: %v", cc.r.ID, cc.key, err)
	}
	cc.session = resp.Msg.GetSessionId()
}

func (cc *channelClient) refresh(ctx context.Context) error {
	_, err := cc.r.C.RefreshChannel(ctx, connect.NewRequest(&api.RefreshChannelRequest{ClientId: cc.r.ID, ChannelKey: cc.key, SessionId: cc.session}))
	return err
}

func watchChannel(t *testing.T, c v1connect.YorkieServiceClient, clientID, key string) *wire.Stream[api.WatchResponse] {
	t.Helper()
	return wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return c.Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: clientID, Resources: []*api.ResourceDescriptor{{
			Resource: &api.ResourceDescriptor_Channel{Channel: &api.ChannelDescriptor{ChannelKey: key}},
		}}}))
	})
}

// awaitCount reads a channel Watch until its count is want, as the SDK
// reads it (the newest sequence number wins), and returns the messages
// that were not counts.
func awaitCount(t *testing.T, s *wire.Stream[api.WatchResponse], want int64) []*api.ChannelEvent {
	t.Helper()
	var count, seq int64 = -1, -1
	var others []*api.ChannelEvent
	for count != want {
		m, err := s.NextWithin(wire.WaitTimeout)
		if err != nil {
			t.Fatalf("waiting for a count of %d (last %d): %v", want, count, err)
		}
		if ci := m.GetInitialization(); ci != nil {
			in := ci.GetResourceInits()[0].GetChannelInit()
			count, seq = in.GetSessionCount(), in.GetSeq()
			continue
		}
		ev := m.GetEvent().GetChannelEvent().GetEvent()
		if ev.GetType() != api.ChannelEvent_TYPE_PRESENCE {
			others = append(others, ev)
			continue
		}
		if ev.GetSeq() > seq {
			count, seq = ev.GetSessionCount(), ev.GetSeq()
		}
	}
	return others
}

// TestChannelOneCountAcrossNodes has a client of one channel group on every
// node: they all see one count, each broadcast reaches every other client
// once, and after the owner dies the heartbeats make the counts right again.
func TestChannelOneCountAcrossNodes(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Second))
	root := wire.UniqueKey(t, "room")
	keys := []string{root, root + ".a", root + ".b"}
	clients := make([]*channelClient, 3)
	for i := range clients {
		clients[i] = &channelClient{r: wire.NewReplica(t, c.Node(i).ConnectJSON()), key: keys[i]}
		clients[i].attach(t)
	}
	watchers := make([]*wire.Stream[api.WatchResponse], 3)
	for i, cc := range clients {
		watchers[i] = watchChannel(t, cc.r.C, cc.r.ID, root)
		awaitCount(t, watchers[i], 3)
	}
	owner := ownerOf(t, c, channel.RoutingKey(root))

	// Each client broadcasts on the root channel; the others get it once.
	for i, cc := range clients {
		for _, payload := range []string{"first", "marker"} {
			_, err := cc.r.C.Broadcast(wire.Context(t), connect.NewRequest(&api.BroadcastRequest{
				ClientId: cc.r.ID, ChannelKey: root, Topic: "t", Payload: fmt.Appendf(nil, "%q", fmt.Sprint(payload, i)),
			}))
			if err != nil {
				t.Fatalf("broadcast by client %d: %v", i, err)
			}
		}
		for j, w := range watchers {
			if j == i {
				continue
			}
			for _, want := range []string{"first", "marker"} {
				ev := w.Next(t).GetEvent().GetChannelEvent().GetEvent()
				if ev.GetPublisher() != cc.r.ID || string(ev.GetPayload()) != fmt.Sprintf("%q", fmt.Sprint(want, i)) {
					t.Fatalf("client %d got %v, want %s%d from client %d exactly once", j, ev, want, i, i)
				}
			}
		}
	}
	for i, w := range watchers {
		if m, err := w.NextWithin(0); err == nil {
			t.Fatalf("client %d got %v: its own broadcast or a duplicate", i, m)
		}
	}

	// The owner dies. Clients of the dead node move to another; every
	// client's heartbeat brings its session back at the new owner.
	c.Abort(owner.Node.Index())
	alive := otherNodes(c, owner.Node)
	for i, cc := range clients {
		if i == owner.Node.Index() {
			cc.r.C = alive[0].ConnectJSON()
		}
	}
	// The streams the survivors relayed to the dead owner either end with
	// a code clients retry or follow the group to its new owner (rpc's
	// followWatch); the dead node's own stream dropped with it.
	for i, w := range watchers {
		if i == owner.Node.Index() {
			continue
		}
		select {
		case <-w.Done():
			if !retryable(w.Err()) {
				t.Fatalf("watcher %d ended with %v, want a retryable error", i, w.Err())
			}
		default:
		}
	}
	for i, cc := range clients {
		poll.Until(t, wire.WaitTimeout, fmt.Sprintf("heartbeat of client %d", i), func() error {
			err := cc.refresh(wire.Context(t))
			if err != nil && !retryable(err) {
				t.Fatalf("heartbeat of client %d: %v", i, err)
			}
			return err
		})
	}
	for _, cc := range clients {
		awaitCount(t, watchChannel(t, cc.r.C, cc.r.ID, root), 3)
	}
	if now := ownerOf(t, c, channel.RoutingKey(root)); now.Node == owner.Node {
		t.Fatalf("the dead node still owns the channel group")
	}
}

// TestChannelRedirectMode: in redirect mode an attach succeeds wherever it
// lands, and the other channel calls name the owner.
func TestChannelRedirectMode(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.WithMode(routing.Redirect))
	key := wire.UniqueKey(t, "room")
	if _, err := c.Node(0).Affinity().Owner(wire.Context(t), channel.RoutingKey(key)); err != nil {
		t.Fatal(err)
	}
	owner := ownerOf(t, c, channel.RoutingKey(key))
	other := otherNodes(c, owner.Node)[0]
	cc := &channelClient{r: wire.NewReplica(t, other.ConnectJSON()), key: key + ".x"}
	cc.attach(t)
	err := cc.refresh(wire.Context(t))
	var ce *connect.Error
	if connect.CodeOf(err) != connect.CodeUnavailable || !errors.As(err, &ce) || ce.Meta().Get(sessionKeyHeader) != owner.Node.SessionKey() {
		t.Fatalf("refresh through a non-owner: %v, want unavailable naming %s", err, owner.Node.SessionKey())
	}
}

// TestWatchResourcesOwnedElsewhere watches a document and a channel in one
// stream through a node that owns neither: both are relayed from their
// owners and merged.
func TestWatchResourcesOwnedElsewhere(t *testing.T) {
	c := clustertest.Start(t, 3)
	docKey := wire.UniqueKey(t, "doc")
	room := wire.UniqueKey(t, "room")
	writer := wire.NewReplica(t, c.Node(0).ConnectJSON())
	writer.MustAttach(docKey)
	joiner := &channelClient{r: wire.NewReplica(t, c.Node(0).ConnectJSON()), key: room}
	joiner.attach(t)
	docOwner := ownerOf(t, c, docKey).Node
	channelOwner := ownerOf(t, c, channel.RoutingKey(room)).Node
	far := otherNodes(c, docOwner, channelOwner)[0]

	reader := wire.NewReplica(t, far.ConnectJSON())
	reader.MustAttach(docKey)
	w := wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return reader.C.Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: reader.ID, Resources: []*api.ResourceDescriptor{
			{Resource: &api.ResourceDescriptor_Document{Document: &api.DocumentDescriptor{DocumentId: reader.DocID}}},
			{Resource: &api.ResourceDescriptor_Channel{Channel: &api.ChannelDescriptor{ChannelKey: room}}},
		}}))
	})
	inits := w.Next(t).GetInitialization().GetResourceInits()
	if len(inits) != 2 || inits[0].GetDocumentInit() == nil || inits[1].GetChannelInit().GetSessionCount() != 1 {
		t.Fatalf("initialization %v, want the document's and the channel's (count 1)", inits)
	}
	writer.Edit(1)
	writer.MustPushPull()
	second := &channelClient{r: wire.NewReplica(t, c.Node(1).ConnectJSON()), key: room + ".sub"}
	second.attach(t)
	var sawChange, sawCount bool
	for !sawChange || !sawCount {
		ev := w.Next(t).GetEvent()
		if d := ev.GetDocEvent().GetEvent(); d.GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED && d.GetPublisher() == writer.ID {
			sawChange = true
		}
		if ch := ev.GetChannelEvent(); ch.GetChannelKey() == room && ch.GetEvent().GetSessionCount() == 2 {
			sawCount = true
		}
	}
}

// TestPeekChannelAcrossNodes: a peek on any node answers the owner's count,
// and in redirect mode a non-owner names the owner.
func TestPeekChannelAcrossNodes(t *testing.T) {
	for _, mode := range []routing.Mode{routing.Forward, routing.Redirect} {
		t.Run(string(mode), func(t *testing.T) {
			c := clustertest.Start(t, 3, clustertest.WithMode(mode))
			key := wire.UniqueKey(t, "room")
			for i := range 3 {
				cc := &channelClient{r: wire.NewReplica(t, c.Node(i).ConnectJSON()), key: fmt.Sprintf("%s.%d", key, i)}
				cc.attach(t)
			}
			owner := ownerOf(t, c, channel.RoutingKey(key))
			for i := range 3 {
				resp, err := c.Node(i).ConnectJSON().PeekChannel(wire.Context(t), connect.NewRequest(&api.PeekChannelRequest{ChannelKey: key}))
				if mode == routing.Redirect && c.Node(i) != owner.Node {
					var ce *connect.Error
					require.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))
					require.ErrorAs(t, err, &ce)
					require.Equal(t, owner.Node.SessionKey(), ce.Meta().Get(sessionKeyHeader))
					continue
				}
				require.NoError(t, err, "peek on node %d", i)
				require.EqualValues(t, 3, resp.Msg.GetSessionCount(), "peek on node %d", i)
			}
		})
	}
}
