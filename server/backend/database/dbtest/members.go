package dbtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// testMembers checks memberships, invites and the account changes of the
// admin API, with two handles acting as two nodes.
func testMembers(t *testing.T, newPair NewPair) {
	t.Run("Members", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		p, q, u, v := unknownID(), unknownID(), unknownID(), unknownID()
		at := time.Now().UTC().Truncate(time.Millisecond)
		m := &database.MemberInfo{ProjectID: p, UserID: u, Role: database.RoleMember, InvitedBy: v, InvitedAt: at}
		require.NoError(t, db.AddMember(ctx, m))
		require.ErrorIs(t, other.AddMember(ctx, m), database.ErrMemberAlreadyExists)
		require.NoError(t, db.AddMember(ctx, &database.MemberInfo{ProjectID: p, UserID: v, Role: database.RoleAdmin, InvitedAt: at.Add(time.Second)}))
		require.NoError(t, db.AddMember(ctx, &database.MemberInfo{ProjectID: q, UserID: u, Role: database.RoleAdmin, InvitedAt: at.Add(2 * time.Second)}))

		got, err := other.FindMember(ctx, p, u)
		require.NoError(t, err)
		require.Equal(t, m, got)
		_, err = other.FindMember(ctx, p, unknownID())
		require.ErrorIs(t, err, database.ErrMemberNotFound)

		list, err := other.ListMembers(ctx, p)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []string{u, v}, []string{list[0].UserID, list[1].UserID})
		mine, err := other.ListMemberships(ctx, u)
		require.NoError(t, err)
		require.Len(t, mine, 2)
		require.Equal(t, []string{p, q}, []string{mine[0].ProjectID, mine[1].ProjectID})
		none, err := other.ListMembers(ctx, unknownID())
		require.NoError(t, err)
		require.Empty(t, none)

		up, err := other.UpdateMemberRole(ctx, p, u, database.RoleAdmin)
		require.NoError(t, err)
		require.Equal(t, database.RoleAdmin, up.Role)
		got, err = db.FindMember(ctx, p, u)
		require.NoError(t, err)
		require.Equal(t, database.RoleAdmin, got.Role)
		_, err = db.UpdateMemberRole(ctx, p, unknownID(), database.RoleAdmin)
		require.ErrorIs(t, err, database.ErrMemberNotFound)

		require.NoError(t, other.RemoveMember(ctx, p, v))
		require.ErrorIs(t, db.RemoveMember(ctx, p, v), database.ErrMemberNotFound)
		require.NoError(t, db.RemoveMemberships(ctx, u))
		mine, err = other.ListMemberships(ctx, u)
		require.NoError(t, err)
		require.Empty(t, mine)
	})

	t.Run("Invites", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		at := time.Now().UTC().Truncate(time.Millisecond)
		inv := &database.InviteInfo{TokenHash: "digest-1", ProjectID: unknownID(), Role: database.RoleMember,
			CreatedBy: unknownID(), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
		require.NoError(t, db.CreateInvite(ctx, inv))
		got, err := other.FindInvite(ctx, "digest-1")
		require.NoError(t, err)
		require.Equal(t, inv, got)
		_, err = other.FindInvite(ctx, "digest-2")
		require.ErrorIs(t, err, database.ErrInviteNotFound)
	})

	t.Run("AccountChanges", func(t *testing.T) {
		db, other := newPair(t)
		ctx := testCtx(t)
		u, err := db.CreateUser(ctx, "eve", "hash-1")
		require.NoError(t, err)
		got, err := other.FindUserByID(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, "eve", got.Username)
		_, err = other.FindUserByID(ctx, unknownID())
		require.ErrorIs(t, err, database.ErrUserNotFound)
		_, err = other.FindUserByID(ctx, "not-hex")
		require.ErrorIs(t, err, database.ErrUserNotFound)

		up, err := other.UpdatePassword(ctx, "eve", "hash-2")
		require.NoError(t, err)
		require.Equal(t, "hash-2", up.HashedPassword)
		got, err = db.FindUserByName(ctx, "eve")
		require.NoError(t, err)
		require.Equal(t, "hash-2", got.HashedPassword)
		_, err = db.UpdatePassword(ctx, "nobody", "x")
		require.ErrorIs(t, err, database.ErrUserNotFound)

		n, err := db.CountProjects(ctx, u.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		p, err := db.CreateProject(ctx, u.ID, "one")
		require.NoError(t, err)
		_, err = db.CreateProject(ctx, u.ID, "two")
		require.NoError(t, err)
		n, err = other.CountProjects(ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, 2, n)

		r, err := other.RotateProjectKeys(ctx, p.ID)
		require.NoError(t, err)
		require.NotEqual(t, p.PublicKey, r.PublicKey)
		require.NotEqual(t, p.SecretKey, r.SecretKey)
		_, err = db.FindProjectByPublicKey(ctx, p.PublicKey)
		require.ErrorIs(t, err, database.ErrProjectNotFound)
		_, err = db.FindProjectBySecretKey(ctx, p.SecretKey)
		require.ErrorIs(t, err, database.ErrProjectNotFound)
		found, err := db.FindProjectBySecretKey(ctx, r.SecretKey)
		require.NoError(t, err)
		require.Equal(t, p.ID, found.ID)
		_, err = db.RotateProjectKeys(ctx, unknownID())
		require.ErrorIs(t, err, database.ErrProjectNotFound)
		_, err = db.RotateProjectKeys(ctx, "not-hex")
		require.ErrorIs(t, err, database.ErrProjectNotFound)

		require.NoError(t, other.DeleteUser(ctx, "eve"))
		require.ErrorIs(t, db.DeleteUser(ctx, "eve"), database.ErrUserNotFound)
		_, err = db.FindUserByName(ctx, "eve")
		require.ErrorIs(t, err, database.ErrUserNotFound)
		// Its projects stay.
		_, err = db.FindProjectByID(ctx, p.ID)
		require.NoError(t, err)

		ext, err := db.CreateExternalUser(ctx, "octo", "github")
		require.NoError(t, err)
		require.Equal(t, "github", ext.AuthProvider)
		require.Empty(t, ext.HashedPassword)
		got, err = other.FindUserByName(ctx, "octo")
		require.NoError(t, err)
		require.Equal(t, "github", got.AuthProvider)
		_, err = other.CreateExternalUser(ctx, "octo", "github")
		require.ErrorIs(t, err, database.ErrUserAlreadyExists)
	})
}
