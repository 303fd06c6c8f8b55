package admin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
)

// TestMembers walks a project's members through invites, role changes and
// removal, with what each role may not do and bad inputs changing nothing.
func TestMembers(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) { c.DB = db })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		owner := login(t, c, "admin", "admin")
		for _, name := range []string{"ann", "ben", "cat"} {
			_, err := c.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: name, Password: "s3cret-pw!"}))
			require.NoError(t, err)
		}
		ann, ben, cat := login(t, c, "ann", "s3cret-pw!"), login(t, c, "ben", "s3cret-pw!"), login(t, c, "cat", "s3cret-pw!")
		_, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "team"}, owner))
		require.NoError(t, err)
		members := func(token string) []string {
			t.Helper()
			res, err := c.ListMembers(ctx, authed(&api.ListMembersRequest{ProjectName: "team"}, token))
			require.NoError(t, err)
			var out []string
			for _, m := range res.Msg.Members {
				out = append(out, m.Username+":"+m.Role)
			}
			return out
		}
		invite := func(token, role string) (string, error) {
			res, err := c.CreateInvite(ctx, authed(&api.CreateInviteRequest{
				ProjectName: "team", Role: role, ExpireOption: api.InviteExpireOption_INVITE_EXPIRE_OPTION_ONE_HOUR,
			}, token))
			if err != nil {
				return "", err
			}
			return res.Msg.Token, nil
		}

		// Strangers see nothing.
		_, err = c.ListMembers(ctx, authed(&api.ListMembersRequest{ProjectName: "team"}, ann))
		wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
		_, err = invite(ann, "member")
		wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
		require.Equal(t, []string{"admin:owner"}, members(owner))

		// Bad invites.
		_, err = invite(owner, "owner")
		wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
		_, err = invite(owner, "boss")
		wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
		_, err = c.CreateInvite(ctx, authed(&api.CreateInviteRequest{ProjectName: "team", Role: "member"}, owner))
		wantCode(t, err, connect.CodeInvalidArgument, admin.CodeInvalidInviteExpireOpt)
		_, err = c.CreateInvite(ctx, authed(&api.CreateInviteRequest{
			ProjectName: "nope", Role: "member", ExpireOption: api.InviteExpireOption_INVITE_EXPIRE_OPTION_SEVEN_DAYS,
		}, owner))
		wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")

		// Ann joins as a member.
		tok, err := invite(owner, "member")
		require.NoError(t, err)
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok}, owner))
		wantCode(t, err, connect.CodeFailedPrecondition, admin.CodeOwnerCannotAccept)
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok + "x"}, ann))
		wantCode(t, err, connect.CodeNotFound, admin.CodeInviteNotFound)
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{}, ann))
		wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
		_, err = c.AcceptInvite(ctx, connect.NewRequest(&api.AcceptInviteRequest{Token: tok}))
		wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
		res, err := c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok}, ann))
		require.NoError(t, err)
		require.Equal(t, "member", res.Msg.Member.Role)
		require.Equal(t, "ann", res.Msg.Member.Username)
		require.Equal(t, []string{"admin:owner", "ann:member"}, members(ann))

		// An expired invite is refused.
		p, err := db.FindProjectByName(ctx, mustUser(t, db, "admin").ID, "team")
		require.NoError(t, err)
		sum := sha256.Sum256([]byte("old-token"))
		past := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		require.NoError(t, db.CreateInvite(ctx, &database.InviteInfo{
			TokenHash: hex.EncodeToString(sum[:]), ProjectID: p.ID, Role: database.RoleAdmin, CreatedAt: past.Add(-time.Hour), ExpiresAt: past,
		}))
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: "old-token"}, ben))
		wantCode(t, err, connect.CodeInvalidArgument, admin.CodeInviteExpired)

		// A member may not manage members.
		_, err = invite(ann, "member")
		wantCode(t, err, connect.CodePermissionDenied, admin.CodePermissionDenied)
		_, err = c.UpdateMemberRole(ctx, authed(&api.UpdateMemberRoleRequest{ProjectName: "team", Username: "ann", Role: "admin"}, ann))
		wantCode(t, err, connect.CodePermissionDenied, admin.CodePermissionDenied)
		_, err = c.RemoveMember(ctx, authed(&api.RemoveMemberRequest{ProjectName: "team", Username: "ann"}, ann))
		wantCode(t, err, connect.CodePermissionDenied, admin.CodePermissionDenied)
		require.Equal(t, []string{"admin:owner", "ann:member"}, members(owner))

		// The owner promotes Ann; as admin she invites Ben.
		_, err = c.UpdateMemberRole(ctx, authed(&api.UpdateMemberRoleRequest{ProjectName: "team", Username: "ann", Role: "owner"}, owner))
		wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
		_, err = c.UpdateMemberRole(ctx, authed(&api.UpdateMemberRoleRequest{ProjectName: "team", Username: "ghost", Role: "admin"}, owner))
		wantCode(t, err, connect.CodeNotFound, admin.CodeMemberNotFound)
		_, err = c.UpdateMemberRole(ctx, authed(&api.UpdateMemberRoleRequest{ProjectName: "team", Username: "cat", Role: "admin"}, owner))
		wantCode(t, err, connect.CodeNotFound, admin.CodeMemberNotFound)
		up, err := c.UpdateMemberRole(ctx, authed(&api.UpdateMemberRoleRequest{ProjectName: "team", Username: "ann", Role: "admin"}, owner))
		require.NoError(t, err)
		require.Equal(t, "admin", up.Msg.Member.Role)
		tok, err = invite(ann, "member")
		require.NoError(t, err)
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok}, ben))
		require.NoError(t, err)
		// Accepting again keeps the membership as it is.
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok}, ben))
		require.NoError(t, err)
		require.Equal(t, []string{"admin:owner", "ann:admin", "ben:member"}, members(ben))
		list, err := c.ListProjects(ctx, authed(&api.ListProjectsRequest{}, ben))
		require.NoError(t, err)
		require.Len(t, list.Msg.Projects, 1)

		// A user who has a project of the same name cannot join.
		_, err = c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "team"}, cat))
		require.NoError(t, err)
		_, err = c.AcceptInvite(ctx, authed(&api.AcceptInviteRequest{Token: tok}, cat))
		wantCode(t, err, connect.CodeAlreadyExists, "ErrProjectAlreadyExists")

		// Removal: the owner is no member; Ben is removed and sees nothing.
		_, err = c.RemoveMember(ctx, authed(&api.RemoveMemberRequest{ProjectName: "team", Username: "admin"}, ann))
		wantCode(t, err, connect.CodeNotFound, admin.CodeMemberNotFound)
		_, err = c.RemoveMember(ctx, authed(&api.RemoveMemberRequest{ProjectName: "team", Username: "ben"}, ann))
		require.NoError(t, err)
		_, err = c.RemoveMember(ctx, authed(&api.RemoveMemberRequest{ProjectName: "team", Username: "ben"}, ann))
		wantCode(t, err, connect.CodeNotFound, admin.CodeMemberNotFound)
		_, err = c.GetProject(ctx, authed(&api.GetProjectRequest{Name: "team"}, ben))
		wantCode(t, err, connect.CodeNotFound, "ErrProjectNotFound")
		require.Equal(t, []string{"admin:owner", "ann:admin"}, members(owner))
	})
}

func mustUser(t *testing.T, db database.Database, name string) *database.UserInfo {
	t.Helper()
	u, err := db.FindUserByName(ctxOf(t), name)
	require.NoError(t, err)
	return u
}

// TestProjectStats checks the counts and daily series of a project's use,
// and that they need the project's secret key.
func TestProjectStats(t *testing.T) {
	databases(t, func(t *testing.T, newDB func(t *testing.T) database.Database) {
		db := newDB(t)
		srv := servertest.Start(t, func(c *server.Config) { c.DB = db })
		c := adminClient(t, srv)
		ctx := ctxOf(t)
		owner := login(t, c, "admin", "admin")
		created, err := c.CreateProject(ctx, authed(&api.CreateProjectRequest{Name: "stats"}, owner))
		require.NoError(t, err)
		p := created.Msg.Project
		for _, key := range []string{"u1", "u1", "u2"} {
			_, err := db.ActivateClient(ctx, p.Id, key, nil)
			require.NoError(t, err)
		}
		_, err = db.FindOrCreateDocument(ctx, p.Id, "doc-1")
		require.NoError(t, err)
		_, err = db.ActivateClient(ctx, database.DefaultProjectID, "elsewhere", nil)
		require.NoError(t, err)

		res, err := c.GetProjectStats(ctx, withKey(&api.GetProjectStatsRequest{DateRange: api.GetProjectStatsRequest_DATE_RANGE_LAST_1W}, p.SecretKey))
		require.NoError(t, err)
		require.EqualValues(t, 1, res.Msg.DocumentsCount)
		require.EqualValues(t, 3, res.Msg.ClientsCount)
		require.EqualValues(t, 2, res.Msg.ActiveUsersCount)
		require.EqualValues(t, 3, res.Msg.ActiveClientsCount)
		require.Len(t, res.Msg.ActiveUsers, 8)
		require.EqualValues(t, 2, res.Msg.ActiveUsers[7].Value)

		_, err = c.GetProjectStats(ctx, withKey(&api.GetProjectStatsRequest{}, p.SecretKey))
		wantCode(t, err, connect.CodeInvalidArgument, "ErrInvalidArgument")
		_, err = c.GetProjectStats(ctx, authed(&api.GetProjectStatsRequest{DateRange: api.GetProjectStatsRequest_DATE_RANGE_LAST_1W}, owner))
		wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
		_, err = c.GetProjectStats(ctx, withKey(&api.GetProjectStatsRequest{DateRange: api.GetProjectStatsRequest_DATE_RANGE_LAST_1W}, "forged"))
		wantCode(t, err, connect.CodeUnauthenticated, "ErrUnauthenticated")
	})
}
