package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// FindUserByID implements database.AccountChanges.
func (db *DB) FindUserByID(ctx context.Context, id string) (*database.UserInfo, error) {
	oid, err := primitive.ObjectIDFromHex(id)
	if err != nil {
		return nil, fmt.Errorf("find user %q: %w", id, database.ErrUserNotFound)
	}
	var r userRecord
	err = db.db.Collection(colUsers).FindOne(ctx, bson.M{"_id": oid}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find user %s: %w", id, database.ErrUserNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: find user %s", id), err)
	}
	return r.info(), nil
}

// UpdatePassword implements database.AccountChanges.
func (db *DB) UpdatePassword(ctx context.Context, username, hashedPassword string) (*database.UserInfo, error) {
	var r userRecord
	err := db.db.Collection(colUsers).FindOneAndUpdate(ctx, bson.M{"username": username},
		bson.M{"$set": bson.M{"hashed_password": hashedPassword}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("update password of %q: %w", username, database.ErrUserNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: update password of %q", username), err)
	}
	return r.info(), nil
}

// DeleteUser implements database.AccountChanges.
func (db *DB) DeleteUser(ctx context.Context, username string) error {
	res, err := db.db.Collection(colUsers).DeleteOne(ctx, bson.M{"username": username})
	if err != nil {
		return wrapErr(fmt.Sprintf("mongo: delete user %q", username), err)
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete user %q: %w", username, database.ErrUserNotFound)
	}
	return nil
}

// RotateProjectKeys implements database.AccountChanges. New keys that
// collide with another project's (128 random bits make it all but
// impossible) are drawn again.
func (db *DB) RotateProjectKeys(ctx context.Context, id string) (*database.ProjectInfo, error) {
	oid, err := primitive.ObjectIDFromHex(id)
	if err != nil {
		return nil, fmt.Errorf("rotate keys of project %q: %w", id, database.ErrProjectNotFound)
	}
	for range maxInsertRaces {
		var r projectRecord
		err := db.db.Collection(colProjects).FindOneAndUpdate(ctx, bson.M{"_id": oid},
			bson.M{"$set": bson.M{
				"public_key": database.NewProjectKey(), "secret_key": database.NewProjectKey(), "updated_at": now(),
			}},
			options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&r)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, fmt.Errorf("rotate keys of project %s: %w", id, database.ErrProjectNotFound)
		}
		if err == nil {
			return r.info(), nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return nil, wrapErr(fmt.Sprintf("mongo: rotate keys of project %s", id), err)
		}
	}
	return nil, fmt.Errorf("mongo: rotate keys of project %s: keys kept colliding", id)
}

// CountProjects implements database.AccountChanges.
func (db *DB) CountProjects(ctx context.Context, owner string) (int, error) {
	n, err := db.db.Collection(colProjects).CountDocuments(ctx, bson.M{"owner": owner})
	if err != nil {
		return 0, wrapErr(fmt.Sprintf("mongo: count projects of %s", owner), err)
	}
	return int(n), nil
}
