package admin_test

import (
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// TestUpdateProjectFields covers the snapshot, channel and origin fields of
// UpdateProject, their bad values, and allowed origins applied to SDK
// calls.
func TestUpdateProjectFields(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) { c.DB = db })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		token := login(t, c, "admin", "admin")
		created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "fields"}, token))
		require.NoError(t, err)
		p := created.Msg.Project
		update := func(f *api.UpdatableProjectFields) (*api.Project, error) {
			res, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: f}, token))
			if err != nil {
				return nil, err
			}
			return res.Msg.Project, nil
		}
		got, err := update(&api.UpdatableProjectFields{
			SnapshotThreshold: wrapperspb.Int64(50),
			SnapshotInterval:  wrapperspb.Int64(20),
			ChannelSessionTtl: wrapperspb.String("90s"),
			AllowedOrigins:    &api.UpdatableProjectFields_AllowedOrigins{Origins: []string{"https://app.example", " https://*.example.org/ "}},
		})
		require.NoError(t, err)
		require.EqualValues(t, 50, got.SnapshotThreshold)
		require.EqualValues(t, 20, got.SnapshotInterval)
		require.Equal(t, "90s", got.ChannelSessionTtl)
		require.Equal(t, []string{"https://app.example", "https://*.example.org"}, got.AllowedOrigins)
		stored, err := db.FindProjectByID(ctx, p.Id)
		require.NoError(t, err)
		require.EqualValues(t, 50, stored.SnapshotThreshold)
		require.Equal(t, []string{"https://app.example", "https://*.example.org"}, stored.AllowedOrigins)

		for name, f := range map[string]*api.UpdatableProjectFields{
			"negative threshold": {SnapshotThreshold: wrapperspb.Int64(-1)},
			"negative interval":  {SnapshotInterval: wrapperspb.Int64(-5)},
			"bad ttl":            {ChannelSessionTtl: wrapperspb.String("soon")},
			"origin with path":   {AllowedOrigins: &api.UpdatableProjectFields_AllowedOrigins{Origins: []string{"https://app.example/path"}}},
			"origin no scheme":   {AllowedOrigins: &api.UpdatableProjectFields_AllowedOrigins{Origins: []string{"app.example"}}},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := update(f)
				wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
			})
		}
		again, err := db.FindProjectByID(ctx, p.Id)
		require.NoError(t, err)
		require.Equal(t, stored.SnapshotThreshold, again.SnapshotThreshold)
		require.Equal(t, stored.ChannelSessionTTL, again.ChannelSessionTTL)
		require.Equal(t, stored.AllowedOrigins, again.AllowedOrigins)

		// SDK calls from a browser origin the project does not allow are
		// refused; allowed ones and calls with no Origin pass.
		yc := servertest.Client(t, srv, servertest.ConnectProto)
		activate := func(origin string) error {
			req := connect.NewRequest(&api.ActivateClientRequest{ClientKey: "k"})
			req.Header().Set("x-api-key", p.PublicKey)
			if origin != "" {
				req.Header().Set("Origin", origin)
			}
			_, err := yc.ActivateClient(ctx, req)
			return err
		}
		require.NoError(t, activate(""))
		require.NoError(t, activate("https://app.example"))
		require.NoError(t, activate("https://www.example.org"))
		wantCode(t, activate("https://evil.example"), connect.CodePermissionDenied, "ErrPermissionDenied")
		wantCode(t, activate("https://a.b.example.org"), connect.CodePermissionDenied, "ErrPermissionDenied")
		_, err = update(&api.UpdatableProjectFields{AllowedOrigins: &api.UpdatableProjectFields_AllowedOrigins{Origins: []string{"*"}}})
		require.NoError(t, err)
		require.NoError(t, activate("https://evil.example"))
	})
}
