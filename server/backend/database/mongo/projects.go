package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Collections of the admin API. Every uniqueness rule is a unique index, so
// racing nodes cannot both create a user, a project name or a key.
const (
	colUsers    = "users"
	colProjects = "projects"
	colSecrets  = "secrets"
)

// userRecord is a user in the users collection.
type userRecord struct {
	ID             primitive.ObjectID `bson:"_id"`
	Username       string             `bson:"username"`
	HashedPassword string             `bson:"hashed_password"`
	AuthProvider   string             `bson:"auth_provider,omitempty"`
	CreatedAt      time.Time          `bson:"created_at"`
}

func (r *userRecord) info() *database.UserInfo {
	return &database.UserInfo{
		ID: r.ID.Hex(), Username: r.Username, HashedPassword: r.HashedPassword,
		AuthProvider: r.AuthProvider, CreatedAt: r.CreatedAt.UTC(),
	}
}

// projectRecord is a project in the projects collection.
type projectRecord struct {
	ID                        primitive.ObjectID `bson:"_id"`
	Name                      string             `bson:"name"`
	Owner                     string             `bson:"owner"`
	PublicKey                 string             `bson:"public_key"`
	SecretKey                 string             `bson:"secret_key"`
	AuthWebhookURL            string             `bson:"auth_webhook_url"`
	AuthWebhookMethods        []string           `bson:"auth_webhook_methods"`
	EventWebhookURL           string             `bson:"event_webhook_url"`
	EventWebhookEvents        []string           `bson:"event_webhook_events"`
	AuthWebhook               webhookRecord      `bson:"auth_webhook"`
	EventWebhook              webhookRecord      `bson:"event_webhook"`
	ClientDeactivateThreshold string             `bson:"client_deactivate_threshold"`
	MaxSubscribersPerDocument int                `bson:"max_subscribers_per_document"`
	MaxAttachmentsPerDocument int                `bson:"max_attachments_per_document"`
	MaxSizePerDocument        int                `bson:"max_size_per_document"`
	RemoveOnDetach            bool               `bson:"remove_on_detach"`
	SnapshotThreshold         int64              `bson:"snapshot_threshold,omitempty"`
	SnapshotInterval          int64              `bson:"snapshot_interval,omitempty"`
	ChannelSessionTTL         string             `bson:"channel_session_ttl,omitempty"`
	AllowedOrigins            []string           `bson:"allowed_origins,omitempty"`
	// AutoRevisionEnabled is absent from records stored before it
	// existed, which keep upstream's default: on.
	AutoRevisionEnabled *bool     `bson:"auto_revision_enabled,omitempty"`
	CreatedAt           time.Time `bson:"created_at"`
	UpdatedAt           time.Time `bson:"updated_at"`
}

// webhookRecord is a project's webhook call settings. Records stored before
// they existed decode as zeros: the server's flags.
type webhookRecord struct {
	MaxRetries      uint64 `bson:"max_retries"`
	MinWaitInterval string `bson:"min_wait_interval"`
	MaxWaitInterval string `bson:"max_wait_interval"`
	RequestTimeout  string `bson:"request_timeout"`
}

func (r *projectRecord) info() *database.ProjectInfo {
	return &database.ProjectInfo{
		ID: r.ID.Hex(), Name: r.Name, Owner: r.Owner, PublicKey: r.PublicKey, SecretKey: r.SecretKey,
		AuthWebhookURL: r.AuthWebhookURL, AuthWebhookMethods: r.AuthWebhookMethods,
		EventWebhookURL: r.EventWebhookURL, EventWebhookEvents: r.EventWebhookEvents,
		AuthWebhook:               database.WebhookSettings(r.AuthWebhook),
		EventWebhook:              database.WebhookSettings(r.EventWebhook),
		ClientDeactivateThreshold: r.ClientDeactivateThreshold,
		MaxSubscribersPerDocument: r.MaxSubscribersPerDocument,
		MaxAttachmentsPerDocument: r.MaxAttachmentsPerDocument,
		MaxSizePerDocument:        r.MaxSizePerDocument,
		RemoveOnDetach:            r.RemoveOnDetach,
		AutoRevisionEnabled:       r.AutoRevisionEnabled == nil || *r.AutoRevisionEnabled,
		SnapshotThreshold:         r.SnapshotThreshold,
		SnapshotInterval:          r.SnapshotInterval,
		ChannelSessionTTL:         r.ChannelSessionTTL,
		AllowedOrigins:            r.AllowedOrigins,
		CreatedAt:                 r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
}

func projectRecordOf(p *database.ProjectInfo) (*projectRecord, error) {
	id, err := primitive.ObjectIDFromHex(p.ID)
	if err != nil {
		return nil, err
	}
	return &projectRecord{
		ID: id, Name: p.Name, Owner: p.Owner, PublicKey: p.PublicKey, SecretKey: p.SecretKey,
		AuthWebhookURL: p.AuthWebhookURL, AuthWebhookMethods: p.AuthWebhookMethods,
		EventWebhookURL: p.EventWebhookURL, EventWebhookEvents: p.EventWebhookEvents,
		AuthWebhook:               webhookRecord(p.AuthWebhook),
		EventWebhook:              webhookRecord(p.EventWebhook),
		ClientDeactivateThreshold: p.ClientDeactivateThreshold,
		MaxSubscribersPerDocument: p.MaxSubscribersPerDocument,
		MaxAttachmentsPerDocument: p.MaxAttachmentsPerDocument,
		MaxSizePerDocument:        p.MaxSizePerDocument,
		RemoveOnDetach:            p.RemoveOnDetach,
		AutoRevisionEnabled:       &p.AutoRevisionEnabled,
		SnapshotThreshold:         p.SnapshotThreshold,
		SnapshotInterval:          p.SnapshotInterval,
		ChannelSessionTTL:         p.ChannelSessionTTL,
		AllowedOrigins:            p.AllowedOrigins,
		CreatedAt:                 p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}, nil
}

// secretRecord is one server-wide secret, keyed by its name.
type secretRecord struct {
	Name  string `bson:"_id"`
	Value string `bson:"value"`
}

// ensureAccountIndexes creates the unique keys of users and projects.
func (db *DB) ensureAccountIndexes(ctx context.Context) error {
	unique := func(name string) *options.IndexOptions { return options.Index().SetName(name).SetUnique(true) }
	specs := []struct {
		col   string
		model mongo.IndexModel
	}{
		{colUsers, mongo.IndexModel{Keys: bson.D{{Key: "username", Value: 1}}, Options: unique("username_unique")}},
		{colProjects, mongo.IndexModel{Keys: bson.D{{Key: "owner", Value: 1}, {Key: "name", Value: 1}}, Options: unique("owner_name_unique")}},
		{colProjects, mongo.IndexModel{Keys: bson.D{{Key: "public_key", Value: 1}}, Options: unique("public_key_unique")}},
		{colProjects, mongo.IndexModel{Keys: bson.D{{Key: "secret_key", Value: 1}}, Options: unique("secret_key_unique")}},
		// A project's members, and a user's projects.
		{colMembers, mongo.IndexModel{Keys: bson.D{{Key: "project_id", Value: 1}}, Options: options.Index().SetName("project_id")}},
		{colMembers, mongo.IndexModel{Keys: bson.D{{Key: "user_id", Value: 1}}, Options: options.Index().SetName("user_id")}},
		// The admin throttles drop stale attempt counts by their last attempt.
		{colStrikes, mongo.IndexModel{Keys: bson.D{{Key: "last", Value: 1}}, Options: options.Index().SetName("last")}},
		// Housekeeping reads the projects that set their own threshold.
		{colProjects, mongo.IndexModel{Keys: bson.D{{Key: "client_deactivate_threshold", Value: 1}}, Options: options.Index().SetName("client_deactivate_threshold")}},
	}
	for _, s := range specs {
		col := db.db.Collection(s.col)
		name := *s.model.Options.Name
		if db.hasIndex(ctx, col, name) {
			continue
		}
		if _, err := col.Indexes().CreateOne(ctx, s.model); err != nil && !db.hasIndex(ctx, col, name) {
			return wrapErr(fmt.Sprintf("mongo: create index %s of %s", name, s.col), err)
		}
	}
	return nil
}

// CreateUser implements database.Accounts.
func (db *DB) CreateUser(ctx context.Context, username, hashedPassword string) (*database.UserInfo, error) {
	return db.insertUser(ctx, username, hashedPassword, "")
}

// CreateExternalUser implements database.AccountChanges.
func (db *DB) CreateExternalUser(ctx context.Context, username, provider string) (*database.UserInfo, error) {
	return db.insertUser(ctx, username, "", provider)
}

func (db *DB) insertUser(ctx context.Context, username, hashedPassword, provider string) (*database.UserInfo, error) {
	id, err := primitive.ObjectIDFromHex(db.clientIDs.Next())
	if err != nil {
		return nil, fmt.Errorf("create user %q: %w", username, err)
	}
	r := &userRecord{ID: id, Username: username, HashedPassword: hashedPassword, AuthProvider: provider, CreatedAt: now()}
	if _, err := db.db.Collection(colUsers).InsertOne(ctx, r); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return nil, fmt.Errorf("create user %q: %w", username, database.ErrUserAlreadyExists)
		}
		return nil, wrapErr(fmt.Sprintf("mongo: create user %q", username), err)
	}
	return r.info(), nil
}

// FindUserByName implements database.Accounts.
func (db *DB) FindUserByName(ctx context.Context, username string) (*database.UserInfo, error) {
	var r userRecord
	err := db.db.Collection(colUsers).FindOne(ctx, bson.M{"username": username}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find user %q: %w", username, database.ErrUserNotFound)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: find user %q", username), err)
	}
	return r.info(), nil
}

// insertProject stores a new project with fresh keys. A duplicate _id or
// (owner, name) is ErrProjectAlreadyExists; a key collision, which 128
// random bits make all but impossible, draws new keys.
func (db *DB) insertProject(ctx context.Context, id primitive.ObjectID, owner, name string) (*database.ProjectInfo, error) {
	col := db.db.Collection(colProjects)
	for range maxInsertRaces {
		t := now()
		r := &projectRecord{
			ID: id, Name: name, Owner: owner,
			PublicKey: database.NewProjectKey(), SecretKey: database.NewProjectKey(),
			CreatedAt: t, UpdatedAt: t,
		}
		_, err := col.InsertOne(ctx, r)
		if err == nil {
			return r.info(), nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return nil, wrapErr(fmt.Sprintf("mongo: create project %q", name), err)
		}
		if n, cerr := col.CountDocuments(ctx, bson.M{"$or": bson.A{bson.M{"_id": id}, bson.M{"owner": owner, "name": name}}}); cerr != nil {
			return nil, wrapErr(fmt.Sprintf("mongo: create project %q", name), cerr)
		} else if n > 0 {
			return nil, fmt.Errorf("create project %q: %w", name, database.ErrProjectAlreadyExists)
		}
	}
	return nil, fmt.Errorf("mongo: create project %q: keys kept colliding", name)
}

// CreateProject implements database.Accounts.
func (db *DB) CreateProject(ctx context.Context, owner, name string) (*database.ProjectInfo, error) {
	id, err := primitive.ObjectIDFromHex(db.clientIDs.Next())
	if err != nil {
		return nil, fmt.Errorf("create project %q: %w", name, err)
	}
	return db.insertProject(ctx, id, owner, name)
}

// EnsureDefaultProject implements database.Accounts: the fixed _id makes
// racing nodes agree on one project.
func (db *DB) EnsureDefaultProject(ctx context.Context, owner string) (*database.ProjectInfo, error) {
	p, err := db.FindProjectByID(ctx, database.DefaultProjectID)
	if !errors.Is(err, database.ErrProjectNotFound) {
		return p, err
	}
	id, _ := primitive.ObjectIDFromHex(database.DefaultProjectID)
	p, err = db.insertProject(ctx, id, owner, database.DefaultProjectName)
	if errors.Is(err, database.ErrProjectAlreadyExists) {
		return db.FindProjectByID(ctx, database.DefaultProjectID)
	}
	return p, err
}

// ListProjects implements database.Accounts.
func (db *DB) ListProjects(ctx context.Context, owner string) ([]*database.ProjectInfo, error) {
	cur, err := db.db.Collection(colProjects).Find(ctx, bson.M{"owner": owner}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrapErr("mongo: list projects", err)
	}
	var rs []projectRecord
	if err := cur.All(ctx, &rs); err != nil {
		return nil, wrapErr("mongo: list projects", err)
	}
	out := make([]*database.ProjectInfo, 0, len(rs))
	for i := range rs {
		out = append(out, rs[i].info())
	}
	return out, nil
}

// findProject returns the one project matching filter.
func (db *DB) findProject(ctx context.Context, what string, filter bson.M) (*database.ProjectInfo, error) {
	var r projectRecord
	err := db.db.Collection(colProjects).FindOne(ctx, filter).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("find project by %s: %w", what, database.ErrProjectNotFound)
	}
	if err != nil {
		return nil, wrapErr("mongo: find project by "+what, err)
	}
	return r.info(), nil
}

// FindProjectByName implements database.Accounts.
func (db *DB) FindProjectByName(ctx context.Context, owner, name string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "name", bson.M{"owner": owner, "name": name})
}

// FindProjectByID implements database.Accounts.
func (db *DB) FindProjectByID(ctx context.Context, id string) (*database.ProjectInfo, error) {
	oid, err := primitive.ObjectIDFromHex(id)
	if err != nil {
		return nil, fmt.Errorf("find project by id %q: %w", id, database.ErrProjectNotFound)
	}
	return db.findProject(ctx, "id", bson.M{"_id": oid})
}

// FindProjectByPublicKey implements database.Accounts.
func (db *DB) FindProjectByPublicKey(ctx context.Context, publicKey string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "public key", bson.M{"public_key": publicKey})
}

// FindProjectBySecretKey implements database.Accounts.
func (db *DB) FindProjectBySecretKey(ctx context.Context, secretKey string) (*database.ProjectInfo, error) {
	return db.findProject(ctx, "secret key", bson.M{"secret_key": secretKey})
}

// UpdateProject implements database.Accounts. The whole record is replaced:
// the unique (owner, name) index refuses a rename onto another project's
// name. Two racing updates of one project may lose one of them, as admin
// edits from two places would anyway.
func (db *DB) UpdateProject(ctx context.Context, owner, id string, u *database.ProjectUpdate) (*database.ProjectInfo, error) {
	p, err := db.FindProjectByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if p.Owner != owner {
		return nil, fmt.Errorf("update project %s: %w", id, database.ErrProjectNotFound)
	}
	u.Apply(p)
	p.UpdatedAt = now()
	r, err := projectRecordOf(p)
	if err != nil {
		return nil, fmt.Errorf("update project %s: %w", id, err)
	}
	res, err := db.db.Collection(colProjects).ReplaceOne(ctx, bson.M{"_id": r.ID, "owner": owner}, r)
	if err != nil && db.nameTaken(ctx, owner, p.Name, id) {
		// FerretDB reports a unique index refusing an update as an
		// internal error, not as a duplicate key: ask what is there.
		return nil, fmt.Errorf("update project %s: name %q: %w", id, p.Name, database.ErrProjectAlreadyExists)
	}
	if err != nil {
		return nil, wrapErr(fmt.Sprintf("mongo: update project %s", id), err)
	}
	if res.MatchedCount == 0 {
		return nil, fmt.Errorf("update project %s: %w", id, database.ErrProjectNotFound)
	}
	return r.info(), nil
}

// nameTaken reports whether another project than id has the owner's name.
func (db *DB) nameTaken(ctx context.Context, owner, name, id string) bool {
	p, err := db.FindProjectByName(ctx, owner, name)
	return err == nil && p.ID != id
}

// ClientDeactivateThresholds implements database.Accounts. Only the
// projects that set a threshold are read, and of them only the ID and the
// threshold: a string field is $gt "" exactly when it is set, and records
// stored before the field existed lack it.
func (db *DB) ClientDeactivateThresholds(ctx context.Context) (map[string]string, error) {
	cur, err := db.db.Collection(colProjects).Find(ctx,
		bson.M{"client_deactivate_threshold": bson.M{"$gt": ""}},
		options.Find().SetProjection(bson.M{"client_deactivate_threshold": 1}))
	if err != nil {
		return nil, wrapErr("mongo: list client deactivate thresholds", err)
	}
	var rs []struct {
		ID        primitive.ObjectID `bson:"_id"`
		Threshold string             `bson:"client_deactivate_threshold"`
	}
	if err := cur.All(ctx, &rs); err != nil {
		return nil, wrapErr("mongo: list client deactivate thresholds", err)
	}
	out := make(map[string]string, len(rs))
	for _, r := range rs {
		if r.Threshold != "" {
			out[r.ID.Hex()] = r.Threshold
		}
	}
	return out, nil
}

// EnsureSecret implements database.Accounts: the first insert of the name
// wins, and everyone reads what it stored.
func (db *DB) EnsureSecret(ctx context.Context, name, candidate string) (string, error) {
	col := db.db.Collection(colSecrets)
	_, err := col.InsertOne(ctx, secretRecord{Name: name, Value: candidate})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return "", wrapErr(fmt.Sprintf("mongo: store secret %q", name), err)
	}
	var r secretRecord
	if err := col.FindOne(ctx, bson.M{"_id": name}).Decode(&r); err != nil {
		return "", wrapErr(fmt.Sprintf("mongo: read secret %q", name), err)
	}
	return r.Value, nil
}
