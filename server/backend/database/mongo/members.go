package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Collections of memberships and invites. A membership's _id is its
// project and user, so the primary key refuses a second one.
const (
	colMembers = "members"
	colInvites = "invites"
)

type memberRecord struct {
	ID        string    `bson:"_id"`
	ProjectID string    `bson:"project_id"`
	UserID    string    `bson:"user_id"`
	Role      string    `bson:"role"`
	InvitedBy string    `bson:"invited_by"`
	InvitedAt time.Time `bson:"invited_at"`
}

func memberID(projectID, userID string) string { return projectID + ":" + userID }

func (r *memberRecord) info() *database.MemberInfo {
	return &database.MemberInfo{
		ProjectID: r.ProjectID, UserID: r.UserID, Role: database.MemberRole(r.Role),
		InvitedBy: r.InvitedBy, InvitedAt: r.InvitedAt.UTC(),
	}
}

type inviteRecord struct {
	TokenHash string    `bson:"_id"`
	ProjectID string    `bson:"project_id"`
	Role      string    `bson:"role"`
	CreatedBy string    `bson:"created_by"`
	CreatedAt time.Time `bson:"created_at"`
	ExpiresAt time.Time `bson:"expires_at"`
}

// AddMember implements database.Members.
func (db *DB) AddMember(ctx context.Context, m *database.MemberInfo) error {
	r := &memberRecord{
		ID: memberID(m.ProjectID, m.UserID), ProjectID: m.ProjectID, UserID: m.UserID,
		Role: string(m.Role), InvitedBy: m.InvitedBy, InvitedAt: m.InvitedAt,
	}
	if _, err := db.db.Collection(colMembers).InsertOne(ctx, r); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("add member %s to project %s: %w", m.UserID, m.ProjectID, database.ErrMemberAlreadyExists)
		}
		return wrapErr(fmt.Sprintf("mongo: add member %s to project %s", m.UserID, m.ProjectID), err)
	}
	return nil
}

// FindMember implements database.Members.
func (db *DB) FindMember(ctx context.Context, projectID, userID string) (*database.MemberInfo, error) {
	var r memberRecord
	err := db.db.Collection(colMembers).FindOne(ctx, bson.M{"_id": memberID(projectID, userID)}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: find member %s of project %s", userID, projectID), err)
	}
	return r.info(), nil
}

func (db *DB) listMembers(ctx context.Context, what string, filter bson.M) ([]*database.MemberInfo, error) {
	cur, err := db.db.Collection(colMembers).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "invited_at", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrapErr("mongo: list "+what, err)
	}
	var rs []memberRecord
	if err := cur.All(ctx, &rs); err != nil {
		return nil, wrapErr("mongo: list "+what, err)
	}
	out := make([]*database.MemberInfo, 0, len(rs))
	for i := range rs {
		out = append(out, rs[i].info())
	}
	return out, nil
}

// ListMembers implements database.Members.
func (db *DB) ListMembers(ctx context.Context, projectID string) ([]*database.MemberInfo, error) {
	return db.listMembers(ctx, "members", bson.M{"project_id": projectID})
}

// ListMemberships implements database.Members.
func (db *DB) ListMemberships(ctx context.Context, userID string) ([]*database.MemberInfo, error) {
	return db.listMembers(ctx, "memberships", bson.M{"user_id": userID})
}

// UpdateMemberRole implements database.Members.
func (db *DB) UpdateMemberRole(ctx context.Context, projectID, userID string, role database.MemberRole) (*database.MemberInfo, error) {
	var r memberRecord
	err := db.db.Collection(colMembers).FindOneAndUpdate(ctx,
		bson.M{"_id": memberID(projectID, userID)},
		bson.M{"$set": bson.M{"role": string(role)}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("update role of member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: update role of member %s of project %s", userID, projectID), err)
	}
	return r.info(), nil
}

// RemoveMember implements database.Members.
func (db *DB) RemoveMember(ctx context.Context, projectID, userID string) error {
	res, err := db.db.Collection(colMembers).DeleteOne(ctx, bson.M{"_id": memberID(projectID, userID)})
	if err != nil {
		return wrapErr(fmt.Sprintf("mongo: remove member %s of project %s", userID, projectID), err)
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("remove member %s of project %s: %w", userID, projectID, database.ErrMemberNotFound)
	}
	return nil
}

// RemoveMemberships implements database.Members.
func (db *DB) RemoveMemberships(ctx context.Context, userID string) error {
	if _, err := db.db.Collection(colMembers).DeleteMany(ctx, bson.M{"user_id": userID}); err != nil {
		return wrapErr(fmt.Sprintf("mongo: remove memberships of %s", userID), err)
	}
	return nil
}

// CreateInvite implements database.Members.
func (db *DB) CreateInvite(ctx context.Context, inv *database.InviteInfo) error {
	r := &inviteRecord{
		TokenHash: inv.TokenHash, ProjectID: inv.ProjectID, Role: string(inv.Role),
		CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt,
	}
	if _, err := db.db.Collection(colInvites).InsertOne(ctx, r); err != nil {
		return wrapErr(fmt.Sprintf("mongo: create invite to project %s", inv.ProjectID), err)
	}
	return nil
}

// FindInvite implements database.Members.
func (db *DB) FindInvite(ctx context.Context, tokenHash string) (*database.InviteInfo, error) {
	var r inviteRecord
	err := db.db.Collection(colInvites).FindOne(ctx, bson.M{"_id": tokenHash}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find invite: %w", database.ErrInviteNotFound)
	}
	if err != nil {
		return nil, wrapErr("mongo: find invite", err)
	}
	return &database.InviteInfo{
		TokenHash: r.TokenHash, ProjectID: r.ProjectID, Role: database.MemberRole(r.Role),
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}, nil
}
