package migrate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// upstreamInvite is an invites row as upstream 0.7.17 writes it: the token
// itself, and expires_at only when the invite expires.
func upstreamInvite(projectID, createdBy primitive.ObjectID, token, role string, expires *time.Time) bson.D {
	d := bson.D{
		{Key: "_id", Value: primitive.NewObjectID()},
		{Key: "project_id", Value: projectID},
		{Key: "token", Value: token},
		{Key: "role", Value: role},
		{Key: "created_by", Value: createdBy},
		{Key: "created_at", Value: time.Now().UTC().Truncate(time.Millisecond)},
	}
	if expires != nil {
		d = append(d, bson.E{Key: "expires_at", Value: *expires})
	}
	return d
}

// Pending invites come over under the digest this server looks tokens up
// by, with their project, role, creator and expiry (none stays none); a
// second run writes none again.
func TestImportsPendingInvites(t *testing.T) {
	e := newEnv(t)
	alpha, err := primitive.ObjectIDFromHex(projectOf(e, "upstream-a-alpha"))
	require.NoError(t, err)
	var admin struct {
		ID primitive.ObjectID `bson:"_id"`
	}
	require.NoError(t, e.srcDB.Collection("users").FindOne(e.ctx, bson.D{}).Decode(&admin))
	week := time.Now().UTC().Add(7 * 24 * time.Hour).Truncate(time.Millisecond)
	_, err = e.srcDB.Collection("invites").InsertMany(e.ctx, []any{
		upstreamInvite(alpha, admin.ID, "upstream-token-member", "member", &week),
		upstreamInvite(primitive.NilObjectID, admin.ID, "upstream-token-admin", "admin", nil),
	})
	require.NoError(t, err)

	im, err := e.open(t, e.src)
	require.NoError(t, err)
	rep, err := im.Run(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Invites)
	require.Equal(t, 2, rep.Written["invites"])

	got, err := e.target.FindInvite(e.ctx, database.InviteTokenHash("upstream-token-member"))
	require.NoError(t, err)
	require.Equal(t, &database.InviteInfo{
		TokenHash: database.InviteTokenHash("upstream-token-member"), ProjectID: alpha.Hex(), Role: database.RoleMember,
		CreatedBy: admin.ID.Hex(), CreatedAt: got.CreatedAt, ExpiresAt: week,
	}, got)
	got, err = e.target.FindInvite(e.ctx, database.InviteTokenHash("upstream-token-admin"))
	require.NoError(t, err)
	require.Equal(t, database.DefaultProjectID, got.ProjectID)
	require.Equal(t, database.RoleAdmin, got.Role)
	require.True(t, got.ExpiresAt.IsZero(), "an invite without expiry keeps none")
	_, err = e.target.FindInvite(e.ctx, "upstream-token-member")
	require.ErrorIs(t, err, database.ErrInviteNotFound, "the token itself is not stored")

	rep, err = im.Run(e.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Written["invites"], "a second run writes no invite")
}

// An invite that grants a role upstream does not know is refused, naming
// the row, before any document is imported.
func TestRefusesAnInviteOfAnotherLayout(t *testing.T) {
	e := newEnv(t)
	row := upstreamInvite(primitive.NilObjectID, primitive.NewObjectID(), "t", "superuser", nil)
	_, err := e.srcDB.Collection("invites").InsertOne(e.ctx, row)
	require.NoError(t, err)
	im, err := e.open(t, e.src)
	require.NoError(t, err)
	rep, err := im.Run(e.ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), row[0].Value.(primitive.ObjectID).Hex())
	require.Zero(t, rep.Documents)
}
