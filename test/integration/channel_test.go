package integration_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

func channelResource(key string) *api.ResourceDescriptor {
	return &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Channel{Channel: &api.ChannelDescriptor{ChannelKey: key}}}
}

func watchResources(t *testing.T, c v1connect.YorkieServiceClient, clientID string, res ...*api.ResourceDescriptor) *wire.Stream[api.WatchResponse] {
	t.Helper()
	return wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
		return c.Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: clientID, Resources: res}))
	})
}

func attachChannel(t testing.TB, c v1connect.YorkieServiceClient, clientID, key string) *api.AttachChannelResponse {
	t.Helper()
	resp, err := c.AttachChannel(wire.Context(t), connect.NewRequest(&api.AttachChannelRequest{ClientId: clientID, ChannelKey: key}))
	if err != nil {
		t.Fatalf("attach %s to channel %s: %v", clientID, key, err)
	}
	return resp.Msg
}

// channelEvent returns the channel event of a Watch message.
func channelEvent(t *testing.T, key string, m *api.WatchResponse) *api.ChannelEvent {
	t.Helper()
	ev := m.GetEvent().GetChannelEvent()
	if ev == nil || ev.GetChannelKey() != key {
		t.Fatalf("got watch message %v, want an event of channel %s", m, key)
	}
	return ev.GetEvent()
}

func TestChannelCountsAndBroadcast(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		key := wire.UniqueKey(t, "room")
		a, b := newReplica(t, c), newReplica(t, c)

		ra := attachChannel(t, c, a.ID, key)
		if ra.GetSessionCount() != 1 || len(ra.GetSessionId()) != 24 {
			t.Fatalf("first attach = %v, want a session and count 1", ra)
		}
		aw := watchResources(t, c, a.ID, channelResource(key))
		ci := aw.Next(t).GetInitialization().GetResourceInits()[0].GetChannelInit()
		if ci.GetChannelKey() != key || ci.GetSessionCount() != 1 || ci.GetSeq() <= 0 {
			t.Fatalf("initialization %v, want channel %s with 1 session and a sequence number", ci, key)
		}

		// A session on a sub-channel counts in its parent.
		rb := attachChannel(t, c, b.ID, key+".sub")
		if rb.GetSessionCount() != 1 {
			t.Fatalf("sub-channel count = %d, want 1", rb.GetSessionCount())
		}
		ev := channelEvent(t, key, aw.Next(t))
		if ev.GetType() != api.ChannelEvent_TYPE_PRESENCE || ev.GetSessionCount() != 2 || ev.GetSeq() <= ci.GetSeq() {
			t.Fatalf("event %v, want a count of 2 with a newer sequence number", ev)
		}

		// Broadcasts reach the channel's other watchers only.
		bw := watchResources(t, c, b.ID, channelResource(key))
		bw.Next(t) // initialization
		if _, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: a.ID, ChannelKey: key, Topic: "cursor", Payload: []byte(`{"x":1}`)})); err != nil {
			t.Fatal(err)
		}
		got := channelEvent(t, key, bw.Next(t))
		if got.GetType() != api.ChannelEvent_TYPE_BROADCAST || got.GetPublisher() != a.ID || got.GetTopic() != "cursor" || string(got.GetPayload()) != `{"x":1}` {
			t.Fatalf("broadcast event %v", got)
		}
		// b's own broadcast comes back to a, never to b: the next message
		// b sees is a's second one.
		if _, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: b.ID, ChannelKey: key, Topic: "t", Payload: []byte(`1`)})); err != nil {
			t.Fatal(err)
		}
		if got := channelEvent(t, key, aw.Next(t)); got.GetPublisher() != b.ID {
			t.Fatalf("a got %v, want b's broadcast", got)
		}
		if _, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: a.ID, ChannelKey: key, Topic: "t", Payload: []byte(`2`)})); err != nil {
			t.Fatal(err)
		}
		if got := channelEvent(t, key, bw.Next(t)); got.GetPublisher() != a.ID || string(got.GetPayload()) != "2" {
			t.Fatalf("b got %v, want a's second broadcast", got)
		}

		// Detach lowers the count; a second detach of the session is harmless.
		for range 2 {
			resp, err := c.DetachChannel(ctx, connect.NewRequest(&api.DetachChannelRequest{ClientId: b.ID, ChannelKey: key + ".sub", SessionId: rb.GetSessionId()}))
			if err != nil || resp.Msg.GetSessionCount() != 0 {
				t.Fatalf("detach = %v, %v; want count 0", resp, err)
			}
		}
		if ev := channelEvent(t, key, aw.Next(t)); ev.GetSessionCount() != 1 {
			t.Fatalf("count after detach = %d, want 1", ev.GetSessionCount())
		}

		// A heartbeat of a session the server lost brings it back.
		resp, err := c.RefreshChannel(ctx, connect.NewRequest(&api.RefreshChannelRequest{ClientId: b.ID, ChannelKey: key + ".sub", SessionId: rb.GetSessionId()}))
		if err != nil || resp.Msg.GetSessionCount() != 1 {
			t.Fatalf("refresh of a gone session = %v, %v; want it counted again", resp, err)
		}
	})
}

func TestChannelErrors(t *testing.T) {
	const limit = 1024
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		ctx := wire.Context(t)
		a := newReplica(t, c)
		session := attachChannel(t, c, a.ID, "room").GetSessionId()

		_, err := c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: a.ID, ChannelKey: "room", Topic: "t", Payload: []byte(strings.Repeat("x", limit+1))}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodePayloadTooLarge)
		_, err = c.Broadcast(ctx, connect.NewRequest(&api.BroadcastRequest{ClientId: a.ID, ChannelKey: "room", Topic: strings.Repeat("t", limit+1)}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodePayloadTooLarge)

		_, err = c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: a.ID, ChannelKey: ".room"}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidChannelKey)

		_, err = c.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: unknownClientID, ChannelKey: "room"}))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)

		_, err = c.RefreshChannel(ctx, connect.NewRequest(&api.RefreshChannelRequest{ClientId: a.ID, ChannelKey: "room", SessionId: "not-a-session"}))
		wantError(t, err, connect.CodeInvalidArgument, errinfo.CodeInvalidArgument)

		b := newReplica(t, c)
		_, err = c.RefreshChannel(ctx, connect.NewRequest(&api.RefreshChannelRequest{ClientId: b.ID, ChannelKey: "room", SessionId: session}))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeSessionNotFound)
	}, func(cfg *server.Config) { cfg.ChannelMaxPayloadBytes = limit })
}

// TestWatchDocumentAndChannelInOneStream watches a document and a channel
// through one Watch: one initialization for both, then the events of each.
func TestWatchDocumentAndChannelInOneStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		docKey := wire.UniqueKey(t, "doc")
		a, b := newReplica(t, c), newReplica(t, c)
		a.MustAttach(docKey)
		b.MustAttach(docKey)
		attachChannel(t, c, a.ID, "lobby")
		w := watchResources(t, c, a.ID, &api.ResourceDescriptor{Resource: &api.ResourceDescriptor_Document{
			Document: &api.DocumentDescriptor{DocumentId: a.DocID},
		}}, channelResource("lobby"))
		inits := w.Next(t).GetInitialization().GetResourceInits()
		if len(inits) != 2 || inits[0].GetDocumentInit().GetDocumentId() != a.DocID || inits[1].GetChannelInit().GetSessionCount() != 1 {
			t.Fatalf("initialization %v, want the document's and the channel's", inits)
		}
		b.Edit(1)
		b.MustPushPull()
		wantEvent(t, docEvent(t, a.DocID, w.Next(t)), changed, b.ID)
		attachChannel(t, c, b.ID, "lobby")
		if ev := channelEvent(t, "lobby", w.Next(t)); ev.GetSessionCount() != 2 {
			t.Fatalf("channel event %v, want a count of 2", ev)
		}
	})
}

func TestWatchChannelDeprecated(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c v1connect.YorkieServiceClient, _ *server.Server) {
		a, b := newReplica(t, c), newReplica(t, c)
		attachChannel(t, c, a.ID, "hall")
		w := wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchChannelResponse], error) {
			return c.WatchChannel(ctx, connect.NewRequest(&api.WatchChannelRequest{ClientId: a.ID, ChannelKey: "hall"}))
		})
		if init := w.Next(t).GetInitialized(); init.GetSessionCount() != 1 {
			t.Fatalf("initialized %v, want a count of 1", init)
		}
		attachChannel(t, c, b.ID, "hall")
		if ev := w.Next(t).GetEvent(); ev.GetSessionCount() != 2 {
			t.Fatalf("event %v, want a count of 2", ev)
		}
	})
}
