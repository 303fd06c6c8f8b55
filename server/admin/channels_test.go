package admin_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// TestAdminChannels lists and counts the channels SDK clients joined,
// broadcasts to their watchers, and refuses bad inputs.
func TestAdminChannels(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		srv := servertest.Start(t, func(c *server.Config) { c.DB = newDB(t) })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		secret, eves := projects(t, c)
		yc := servertest.Client(t, srv, servertest.ConnectProto)
		a, b := wire.NewReplica(t, yc), wire.NewReplica(t, yc)
		for _, join := range []struct {
			r   *wire.Replica
			key string
		}{{a, "room.1"}, {b, "room.1"}, {a, "room.2"}, {b, "lobby"}} {
			_, err := yc.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: join.r.ID, ChannelKey: join.key}))
			require.NoError(t, err)
		}

		list, err := c.ListChannels(ctx, byKey(&api.ListChannelsRequest{Query: "room", Limit: 10}, secret))
		require.NoError(t, err)
		require.Equal(t, []*api.ChannelSummary{{Key: "room.1", SessionCount: 2}, {Key: "room.2", SessionCount: 1}}, plain(list.Msg.Channels))
		list, err = c.ListChannels(ctx, byKey(&api.ListChannelsRequest{Limit: 1}, secret))
		require.NoError(t, err)
		require.Equal(t, []*api.ChannelSummary{{Key: "lobby", SessionCount: 1}}, plain(list.Msg.Channels))
		list, err = c.ListChannels(ctx, byKey(&api.ListChannelsRequest{Limit: 10}, eves))
		require.NoError(t, err)
		require.Empty(t, list.Msg.Channels, "another project's channels")

		got, err := c.GetChannels(ctx, byKey(&api.GetChannelsRequest{ChannelKeys: []string{"room", "room.1", "nobody"}}, secret))
		require.NoError(t, err)
		require.Equal(t, []*api.ChannelSummary{{Key: "room"}, {Key: "room.1", SessionCount: 2}, {Key: "nobody"}}, plain(got.Msg.Channels))
		got, err = c.GetChannels(ctx, byKey(&api.GetChannelsRequest{ChannelKeys: []string{"room"}, IncludeSubPath: true}, secret))
		require.NoError(t, err)
		require.Equal(t, []*api.ChannelSummary{{Key: "room", SessionCount: 3}}, plain(got.Msg.Channels))

		// A broadcast by admin reaches every watcher of the channel.
		w := wire.OpenStream(t, func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
			return yc.Watch(ctx, connect.NewRequest(&api.WatchRequest{ClientId: a.ID, Resources: []*api.ResourceDescriptor{{
				Resource: &api.ResourceDescriptor_Channel{Channel: &api.ChannelDescriptor{ChannelKey: "room.1"}},
			}}}))
		})
		require.NotNil(t, w.Next(t).GetInitialization())
		_, err = c.BroadcastByAdmin(ctx, byKey(&api.BroadcastByAdminRequest{ChannelKey: "room.1", Topic: "notice", Payload: []byte(`"hi"`)}, secret))
		require.NoError(t, err)
		for {
			ev := w.Next(t).GetEvent().GetChannelEvent().GetEvent()
			if ev.GetType() == api.ChannelEvent_TYPE_BROADCAST {
				require.Equal(t, "notice", ev.GetTopic())
				require.Equal(t, `"hi"`, string(ev.GetPayload()))
				break
			}
		}

		bad := []struct {
			name string
			call func() error
			code connect.Code
			info string
		}{
			{"no credentials", func() error {
				_, err := c.ListChannels(ctx, connect.NewRequest(&api.ListChannelsRequest{Limit: 1}))
				return err
			}, connect.CodeUnauthenticated, "ErrUnauthenticated"},
			{"limit 0", func() error {
				_, err := c.ListChannels(ctx, byKey(&api.ListChannelsRequest{}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"limit over the bound", func() error {
				_, err := c.ListChannels(ctx, byKey(&api.ListChannelsRequest{Limit: 101}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
			{"a malformed channel key", func() error {
				_, err := c.GetChannels(ctx, byKey(&api.GetChannelsRequest{ChannelKeys: []string{".room"}}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidChannelKey"},
			{"a broadcast on a malformed key", func() error {
				_, err := c.BroadcastByAdmin(ctx, byKey(&api.BroadcastByAdminRequest{ChannelKey: "room..1", Topic: "t"}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidChannelKey"},
			{"a broadcast without a topic", func() error {
				_, err := c.BroadcastByAdmin(ctx, byKey(&api.BroadcastByAdminRequest{ChannelKey: "room.1"}, secret))
				return err
			}, connect.CodeInvalidArgument, "ErrInvalidArgument"},
		}
		for _, b := range bad {
			wantCode(t, b.call(), b.code, b.info)
		}
		// Another project's broadcast on the same key reaches nobody here.
		_, err = c.BroadcastByAdmin(ctx, byKey(&api.BroadcastByAdminRequest{ChannelKey: "room.1", Topic: "other", Payload: []byte(`1`)}, eves))
		require.NoError(t, err)
		_, err = c.BroadcastByAdmin(ctx, byKey(&api.BroadcastByAdminRequest{ChannelKey: "room.1", Topic: "marker", Payload: []byte(`2`)}, secret))
		require.NoError(t, err)
		for {
			ev := w.Next(t).GetEvent().GetChannelEvent().GetEvent()
			if ev.GetType() == api.ChannelEvent_TYPE_BROADCAST {
				require.Equal(t, "marker", ev.GetTopic(), "nothing of the other project came first")
				break
			}
		}
	})
}

// plain copies channel summaries without protobuf internals, to compare.
func plain(cs []*api.ChannelSummary) []*api.ChannelSummary {
	out := make([]*api.ChannelSummary, len(cs))
	for i, c := range cs {
		out[i] = &api.ChannelSummary{Key: c.Key, SessionCount: c.SessionCount}
	}
	return out
}
