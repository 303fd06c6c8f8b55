package admin_test

import (
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// withCookie wraps a message in a request carrying the token as the
// dashboard's session cookie, and no authorization header.
func withCookie[T any](msg *T, token string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Add("Cookie", (&http.Cookie{Name: admin.SessionCookie, Value: token}).String())
	return req
}

// withKey wraps a message in a request carrying a project's secret key.
func withKey[T any](msg *T, key string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("Authorization", "API-Key "+key)
	return req
}

// TestAuthorize checks the credentials every admin call accepts and the
// roles it checks: tokens, session cookies, secret keys, and a member's
// role in a project it does not own.
func TestAuthorize(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		const secret = "test-token-secret"
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) {
			c.DB = db
			c.Admin.TokenSecret = secret
		})
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		owner := login(t, c, "admin", "admin")
		_, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: "mia", Password: "s3cret-pw!"}))
		require.NoError(t, err)
		mia := login(t, c, "mia", "s3cret-pw!")
		created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "shared"}, owner))
		require.NoError(t, err)
		p := created.Msg.Project

		t.Run("Cookie", func(t *testing.T) {
			list, err := c.ListProjects(ctx, withCookie(&api.ListProjectsRequest{}, owner))
			require.NoError(t, err)
			require.Len(t, list.Msg.Projects, 2)
			for name, cookie := range map[string]string{
				"forged":  signed("guessed", "admin", time.Now().Add(time.Hour)),
				"expired": signed(secret, "admin", time.Now().Add(-time.Minute)),
				"garbage": "not-a-token",
			} {
				t.Run(name, func(t *testing.T) {
					_, err := c.ListProjects(ctx, withCookie(&api.ListProjectsRequest{}, cookie))
					wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
				})
			}
			// The authorization header wins over the cookie.
			req := withCookie(&api.ListProjectsRequest{}, owner)
			req.Header().Set("Authorization", "Bearer forged")
			_, err = c.ListProjects(ctx, req)
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
		})

		t.Run("SecretKey", func(t *testing.T) {
			// A secret key is refused by calls about a user's account...
			_, err := c.ListProjects(ctx, withKey(&api.ListProjectsRequest{}, p.SecretKey))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			_, err = c.CreateProject(ctx, withKey(&api.CreateProjectRequest{Name: "by-key"}, p.SecretKey))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			// ...and accepted by the calls that take one.
			_, err = c.GetServerVersion(ctx, withKey(&api.GetServerVersionRequest{}, p.SecretKey))
			require.NoError(t, err)
			for _, key := range []string{"unknown-key", p.PublicKey} {
				_, err = c.GetServerVersion(ctx, withKey(&api.GetServerVersionRequest{}, key))
				wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			}
			req := connect.NewRequest(&api.GetServerVersionRequest{})
			req.Header().Set("Authorization", "API-Key ")
			_, err = c.GetServerVersion(ctx, req)
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
		})

		t.Run("Roles", func(t *testing.T) {
			update := func(token string) error {
				_, err := c.UpdateProject(ctx, authed(&api.UpdateProjectRequest{Id: p.Id, Fields: &api.UpdatableProjectFields{
					MaxAttachmentsPerDocument: wrapperspb.Int32(7),
				}}, token))
				return err
			}
			// A stranger sees nothing of the project.
			_, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "shared"}, mia))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
			wantCode(t, update(mia), connect.CodeNotFound, "ErrProjectNotFound")
			_, err = c.RotateProjectKeys(ctx, authed(&api.RotateProjectKeysRequest{Id: p.Id}, mia))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")

			// A member reads it but may not change it.
			miaUser, err := db.FindUserByName(ctx, "mia")
			require.NoError(t, err)
			require.NoError(t, db.AddMember(ctx, &database.MemberInfo{
				ProjectID: p.Id, UserID: miaUser.ID, Role: database.RoleMember, InvitedAt: time.Now().UTC().Truncate(time.Millisecond),
			}))
			got, err := c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "shared"}, mia))
			require.NoError(t, err)
			require.Equal(t, p.Id, got.Msg.Project.Id)
			list, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, mia))
			require.NoError(t, err)
			require.Len(t, list.Msg.Projects, 1)
			wantCode(t, update(mia), connect.CodePermissionDenied, admin.CodePermissionDenied)
			_, err = c.RotateProjectKeys(ctx, authed(&api.RotateProjectKeysRequest{Id: p.Id}, mia))
			wantCode(t, err, connect.CodePermissionDenied, admin.CodePermissionDenied)
			still, err := db.FindProjectByID(ctx, p.Id)
			require.NoError(t, err)
			require.Zero(t, still.MaxAttachmentsPerDocument)
			require.Equal(t, p.SecretKey, still.SecretKey)

			// An admin may.
			_, err = db.UpdateMemberRole(ctx, p.Id, miaUser.ID, database.RoleAdmin)
			require.NoError(t, err)
			require.NoError(t, update(mia))
			rotated, err := c.RotateProjectKeys(ctx, authed(&api.RotateProjectKeysRequest{Id: p.Id}, mia))
			require.NoError(t, err)
			require.NotEqual(t, p.SecretKey, rotated.Msg.Project.SecretKey)
			require.NotEqual(t, p.PublicKey, rotated.Msg.Project.PublicKey)
			// The old secret key no longer works, the new one does.
			_, err = c.GetServerVersion(ctx, withKey(&api.GetServerVersionRequest{}, p.SecretKey))
			wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
			_, err = c.GetServerVersion(ctx, withKey(&api.GetServerVersionRequest{}, rotated.Msg.Project.SecretKey))
			require.NoError(t, err)
			_, err = c.RotateProjectKeys(ctx, authed(&api.RotateProjectKeysRequest{Id: "000000000000000000000fff"}, owner))
			wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
		})
	})
}
