package migrate

// Reading upstream Yorkie 0.7.17's MongoDB layout: one collection per
// record kind, ObjectIDs for every ID, Int64 sequence numbers, changes as
// rows of protobuf operations, version vectors as packed binary and
// snapshots as protobuf, zstd-compressed behind a one-byte header.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
	"go.mongodb.org/mongo-driver/mongo"
	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Collections of upstream 0.7.17. The first ones tell a Yorkie database;
// all of them, a layout of the upstream versions this importer reads
// (snapshot_bodies appeared in 0.7.10, members and invites in 0.7.0).
var (
	yorkieCollections = []string{"projects", "users", "clients", "documents", "changes", "snapshots"}
	layoutCollections = []string{"versionvectors", "revisions", "schemas", "members", "invites", "snapshot_bodies", "clusternodes"}
)

// Errors about the source, which name the record concerned.
var (
	// ErrNotYorkie: the source database is not a Yorkie database.
	ErrNotYorkie = errors.New("not a Yorkie database")
	// ErrAnotherLayout: the source was written by an upstream version whose
	// layout this importer does not read.
	ErrAnotherLayout = errors.New("layout of another upstream version (this importer reads Yorkie 0.7.10 to 0.7.17)")
	// ErrUndecodable: a change, snapshot or version vector does not decode.
	ErrUndecodable = errors.New("does not decode")
)

// Encodings of upstream's values.
var (
	zeroActor           = make([]byte, 12)
	snapshotFormatZstd  = byte(0x01)
	versionVectorHeader = 8
	versionVectorEntry  = 12 + 8
)

// checkLayout tells a Yorkie 0.7.17 database from anything else.
func checkLayout(ctx context.Context, db *mongo.Database) error {
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("list collections of source database %s: %w", db.Name(), err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	for _, n := range yorkieCollections {
		if !have[n] {
			return fmt.Errorf("source database %s: no collection %q: %w", db.Name(), n, ErrNotYorkie)
		}
	}
	for _, n := range layoutCollections {
		if !have[n] {
			return fmt.Errorf("source database %s: no collection %q: %w", db.Name(), n, ErrAnotherLayout)
		}
	}
	// 0.7.17 keeps the default project under the all-zero ID.
	n, err := db.Collection("projects").CountDocuments(ctx, bson.D{{Key: "_id", Value: primitive.NilObjectID}})
	if err != nil {
		return fmt.Errorf("source database %s: read projects: %w", db.Name(), err)
	}
	if n == 0 {
		return fmt.Errorf("source database %s: no default project %s: %w", db.Name(), primitive.NilObjectID.Hex(), ErrNotYorkie)
	}
	return nil
}

// upProject is a row of projects.
type upProject struct {
	ID                          primitive.ObjectID `bson:"_id"`
	Name                        string             `bson:"name"`
	Owner                       primitive.ObjectID `bson:"owner"`
	PublicKey                   string             `bson:"public_key"`
	SecretKey                   string             `bson:"secret_key"`
	AuthWebhookURL              string             `bson:"auth_webhook_url"`
	AuthWebhookMethods          []string           `bson:"auth_webhook_methods"`
	AuthWebhookMaxRetries       uint64             `bson:"auth_webhook_max_retries"`
	AuthWebhookMinWaitInterval  string             `bson:"auth_webhook_min_wait_interval"`
	AuthWebhookMaxWaitInterval  string             `bson:"auth_webhook_max_wait_interval"`
	AuthWebhookRequestTimeout   string             `bson:"auth_webhook_request_timeout"`
	EventWebhookURL             string             `bson:"event_webhook_url"`
	EventWebhookEvents          []string           `bson:"event_webhook_events"`
	EventWebhookMaxRetries      uint64             `bson:"event_webhook_max_retries"`
	EventWebhookMinWaitInterval string             `bson:"event_webhook_min_wait_interval"`
	EventWebhookMaxWaitInterval string             `bson:"event_webhook_max_wait_interval"`
	EventWebhookRequestTimeout  string             `bson:"event_webhook_request_timeout"`
	ClientDeactivateThreshold   string             `bson:"client_deactivate_threshold"`
	ChannelSessionTTL           string             `bson:"channel_session_ttl"`
	SnapshotThreshold           int64              `bson:"snapshot_threshold"`
	SnapshotInterval            int64              `bson:"snapshot_interval"`
	MaxSubscribersPerDocument   int                `bson:"max_subscribers_per_document"`
	MaxAttachmentsPerDocument   int                `bson:"max_attachments_per_document"`
	MaxSizePerDocument          int                `bson:"max_size_per_document"`
	RemoveOnDetach              bool               `bson:"remove_on_detach"`
	AutoRevisionEnabled         bool               `bson:"auto_revision_enabled"`
	AllowedOrigins              []string           `bson:"allowed_origins"`
	CreatedAt                   time.Time          `bson:"created_at"`
	UpdatedAt                   time.Time          `bson:"updated_at"`
}

// info is the project as this server keeps it, every setting included.
func (p *upProject) info() *database.ProjectInfo {
	info := &database.ProjectInfo{
		ID: p.ID.Hex(), Name: p.Name, Owner: p.Owner.Hex(), PublicKey: p.PublicKey, SecretKey: p.SecretKey,
		AuthWebhookURL: p.AuthWebhookURL, AuthWebhookMethods: p.AuthWebhookMethods,
		EventWebhookURL: p.EventWebhookURL, EventWebhookEvents: p.EventWebhookEvents,
		AuthWebhook: database.WebhookSettings{
			MaxRetries: p.AuthWebhookMaxRetries, MinWaitInterval: p.AuthWebhookMinWaitInterval,
			MaxWaitInterval: p.AuthWebhookMaxWaitInterval, RequestTimeout: p.AuthWebhookRequestTimeout,
		},
		EventWebhook: database.WebhookSettings{
			MaxRetries: p.EventWebhookMaxRetries, MinWaitInterval: p.EventWebhookMinWaitInterval,
			MaxWaitInterval: p.EventWebhookMaxWaitInterval, RequestTimeout: p.EventWebhookRequestTimeout,
		},
		ClientDeactivateThreshold: p.ClientDeactivateThreshold,
		MaxSubscribersPerDocument: p.MaxSubscribersPerDocument,
		MaxAttachmentsPerDocument: p.MaxAttachmentsPerDocument,
		MaxSizePerDocument:        p.MaxSizePerDocument,
		RemoveOnDetach:            p.RemoveOnDetach,
		AutoRevisionEnabled:       p.AutoRevisionEnabled,
		SnapshotThreshold:         p.SnapshotThreshold,
		SnapshotInterval:          p.SnapshotInterval,
		ChannelSessionTTL:         p.ChannelSessionTTL,
		AllowedOrigins:            p.AllowedOrigins,
		CreatedAt:                 p.CreatedAt,
		UpdatedAt:                 p.UpdatedAt,
	}
	if p.UpdatedAt.IsZero() {
		info.UpdatedAt = p.CreatedAt
	}
	return info
}

// upUser is a row of users.
type upUser struct {
	ID             primitive.ObjectID `bson:"_id"`
	Username       string             `bson:"username"`
	HashedPassword string             `bson:"hashed_password"`
	CreatedAt      time.Time          `bson:"created_at"`
}

// upSchema is a row of schemas.
type upSchema struct {
	ID        primitive.ObjectID `bson:"_id"`
	ProjectID primitive.ObjectID `bson:"project_id"`
	Name      string             `bson:"name"`
	Version   int                `bson:"version"`
	Body      string             `bson:"body"`
	Rules     []struct {
		Path      string                  `bson:"path"`
		Type      string                  `bson:"type"`
		TreeNodes []database.TreeNodeRule `bson:"tree_nodes"`
	} `bson:"rules"`
	CreatedAt time.Time `bson:"created_at"`
}

func (s *upSchema) info() *database.SchemaInfo {
	out := &database.SchemaInfo{
		ID: s.ID.Hex(), ProjectID: s.ProjectID.Hex(), Name: s.Name, Version: s.Version, Body: s.Body,
		Rules: make([]database.Rule, len(s.Rules)), CreatedAt: s.CreatedAt,
	}
	for i, r := range s.Rules {
		out.Rules[i] = database.Rule{Path: r.Path, Type: r.Type, TreeNodes: r.TreeNodes}
	}
	return out
}

// upMember is a row of members.
type upMember struct {
	ProjectID primitive.ObjectID `bson:"project_id"`
	UserID    primitive.ObjectID `bson:"user_id"`
	Role      string             `bson:"role"`
	InvitedBy primitive.ObjectID `bson:"invited_by"`
	InvitedAt time.Time          `bson:"invited_at"`
}

// upInvite is a row of invites: upstream keeps the token itself.
type upInvite struct {
	ID        primitive.ObjectID `bson:"_id"`
	ProjectID primitive.ObjectID `bson:"project_id"`
	Token     string             `bson:"token"`
	Role      string             `bson:"role"`
	CreatedBy primitive.ObjectID `bson:"created_by"`
	CreatedAt time.Time          `bson:"created_at"`
	// ExpiresAt is absent for an invite that never expires.
	ExpiresAt *time.Time `bson:"expires_at"`
}

// upDocument is a row of documents.
type upDocument struct {
	ID        primitive.ObjectID `bson:"_id"`
	ProjectID primitive.ObjectID `bson:"project_id"`
	Key       string             `bson:"key"`
	ServerSeq int64              `bson:"server_seq"`
	CreatedAt time.Time          `bson:"created_at"`
	UpdatedAt time.Time          `bson:"updated_at"`
	RemovedAt time.Time          `bson:"removed_at"`
	// Schema is absent, "" or the key of the schema the document is bound to.
	Schema string `bson:"schema"`
}

func (d *upDocument) info() *database.DocInfo {
	return &database.DocInfo{
		ID: d.ID.Hex(), ProjectID: d.ProjectID.Hex(), Key: d.Key,
		ServerSeq: d.ServerSeq, CreatedAt: d.CreatedAt, RemovedAt: d.RemovedAt, Schema: d.Schema,
	}
}

// name says which document a message is about.
func (d *upDocument) name() string {
	return fmt.Sprintf("document %q (%s, project %s)", d.Key, d.ID.Hex(), d.ProjectID.Hex())
}

// upChange is a row of changes: only changes that carry operations are
// stored upstream.
type upChange struct {
	ID             primitive.ObjectID `bson:"_id"`
	ServerSeq      int64              `bson:"server_seq"`
	ClientSeq      int64              `bson:"client_seq"`
	Lamport        int64              `bson:"lamport"`
	ActorID        primitive.ObjectID `bson:"actor_id"`
	VersionVector  bson.RawValue      `bson:"version_vector"`
	Message        string             `bson:"message"`
	Operations     []bson.RawValue    `bson:"operations"`
	PresenceChange bson.RawValue      `bson:"presence_change"`
}

// binaryOf returns the bytes of a Binary value; absent or null is nil.
func binaryOf(v bson.RawValue, what string) ([]byte, error) {
	switch v.Type {
	case 0, bson.TypeNull:
		return nil, nil
	case bson.TypeBinary:
		_, data := v.Binary()
		return data, nil
	}
	return nil, fmt.Errorf("%s is BSON %s, not binary: %w", what, v.Type, ErrAnotherLayout)
}

// change converts the row to a stored change of this server.
func (c *upChange) change() (*database.Change, error) {
	vvBytes, err := binaryOf(c.VersionVector, "version_vector")
	if err != nil {
		return nil, err
	}
	vv, err := decodeVersionVector(vvBytes)
	if err != nil {
		return nil, err
	}
	body := &api.Change{
		Id: &api.ChangeID{
			ClientSeq: uint32(c.ClientSeq), ServerSeq: c.ServerSeq, Lamport: c.Lamport,
			ActorId: c.ActorID[:], VersionVector: &api.VersionVector{Vector: vv},
		},
		Message: c.Message,
	}
	for i, raw := range c.Operations {
		data, err := binaryOf(raw, fmt.Sprintf("operation %d", i))
		if err != nil {
			return nil, err
		}
		op := &api.Operation{}
		if err := proto.Unmarshal(data, op); err != nil {
			return nil, fmt.Errorf("operation %d %w: %w", i, ErrUndecodable, err)
		}
		body.Operations = append(body.Operations, op)
	}
	pc, err := binaryOf(c.PresenceChange, "presence_change")
	if err != nil {
		return nil, err
	}
	if pc != nil {
		body.PresenceChange = &api.PresenceChange{}
		if err := proto.Unmarshal(pc, body.PresenceChange); err != nil {
			return nil, fmt.Errorf("presence_change %w: %w", ErrUndecodable, err)
		}
	}
	return &database.Change{ServerSeq: c.ServerSeq, ActorID: c.ActorID.Hex(), ClientSeq: uint32(c.ClientSeq), Body: body}, nil
}

// placeholder stands for a change upstream numbered but did not store (a
// presence-only change, kept in upstream's memory only): the log here has
// no gaps. It carries no operation, presence or clocks, so applying it, on
// this server or in an SDK, changes nothing.
func placeholder(serverSeq int64) *database.Change {
	return &database.Change{
		ServerSeq: serverSeq,
		ActorID:   primitive.NilObjectID.Hex(),
		Body: &api.Change{Id: &api.ChangeID{
			ServerSeq: serverSeq, ActorId: zeroActor, VersionVector: &api.VersionVector{},
		}},
	}
}

// decodeVersionVector reads upstream's packed vector: a big-endian Int64
// count, then per entry a 12-byte actor and a big-endian Int64 lamport.
// The result is in wire form (base64 actor -> lamport).
func decodeVersionVector(b []byte) (map[string]int64, error) {
	if b == nil {
		return map[string]int64{}, nil
	}
	if len(b) < versionVectorHeader {
		return nil, fmt.Errorf("version vector of %d bytes %w", len(b), ErrUndecodable)
	}
	n := binary.BigEndian.Uint64(b)
	if n > uint64(len(b)) || uint64(len(b)) != uint64(versionVectorHeader)+n*uint64(versionVectorEntry) {
		return nil, fmt.Errorf("version vector of %d entries in %d bytes %w", n, len(b), ErrUndecodable)
	}
	out := make(map[string]int64, n)
	for off := versionVectorHeader; off < len(b); off += versionVectorEntry {
		actor := base64.StdEncoding.EncodeToString(b[off : off+12])
		out[actor] = int64(binary.BigEndian.Uint64(b[off+12:]))
	}
	return out, nil
}

// upSnapshot is a row of snapshots.
type upSnapshot struct {
	ID              primitive.ObjectID `bson:"_id"`
	DocID           primitive.ObjectID `bson:"doc_id"`
	ProjectID       primitive.ObjectID `bson:"project_id"`
	ServerSeq       int64              `bson:"server_seq"`
	Lamport         int64              `bson:"lamport"`
	VersionVector   bson.RawValue      `bson:"version_vector"`
	Snapshot        bson.RawValue      `bson:"snapshot"`
	HasExternalBody bool               `bson:"has_external_body"`
}

// snapshot reads the row, its body from snapshot_bodies when it is kept
// there, into a snapshot of this server (uncompressed protobuf).
func (s *upSnapshot) snapshot(ctx context.Context, src *mongo.Database) (*database.Snapshot, error) {
	body, err := binaryOf(s.Snapshot, "snapshot")
	if err != nil {
		return nil, err
	}
	if s.HasExternalBody {
		var row struct {
			Snapshot bson.RawValue `bson:"snapshot"`
		}
		err := src.Collection("snapshot_bodies").FindOne(ctx, bson.D{
			{Key: "project_id", Value: s.ProjectID}, {Key: "doc_id", Value: s.DocID}, {Key: "server_seq", Value: s.ServerSeq},
		}).Decode(&row)
		if err != nil {
			return nil, fmt.Errorf("read its body in snapshot_bodies: %w", err)
		}
		if body, err = binaryOf(row.Snapshot, "snapshot body"); err != nil {
			return nil, err
		}
	}
	data, err := decompressSnapshot(body)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(data, &api.Snapshot{}); err != nil {
		return nil, fmt.Errorf("snapshot %w: %w", ErrUndecodable, err)
	}
	vvBytes, err := binaryOf(s.VersionVector, "version_vector")
	if err != nil {
		return nil, err
	}
	vv, err := decodeVersionVector(vvBytes)
	if err != nil {
		return nil, err
	}
	return &database.Snapshot{ServerSeq: s.ServerSeq, Lamport: s.Lamport, VersionVector: vv, Data: data}, nil
}

// decompressSnapshot undoes upstream's snapshot encoding: 0x01 and a zstd
// frame, or (older rows) the protobuf itself, which never starts with 0x01.
func decompressSnapshot(b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != snapshotFormatZstd {
		return b, nil
	}
	dec, err := zstd.NewReader(bytes.NewReader(b[1:]))
	if err != nil {
		return nil, fmt.Errorf("snapshot zstd frame %w: %w", ErrUndecodable, err)
	}
	defer dec.Close()
	out, err := io.ReadAll(dec)
	if err != nil {
		return nil, fmt.Errorf("snapshot zstd frame %w: %w", ErrUndecodable, err)
	}
	return out, nil
}

// upClient is a row of clients.
type upClient struct {
	ID        primitive.ObjectID         `bson:"_id"`
	ProjectID primitive.ObjectID         `bson:"project_id"`
	Key       string                     `bson:"key"`
	Status    string                     `bson:"status"`
	Metadata  map[string]string          `bson:"metadata"`
	Documents map[string]upClientDocInfo `bson:"documents"`
	CreatedAt time.Time                  `bson:"created_at"`
	UpdatedAt time.Time                  `bson:"updated_at"`
}

// upClientDocInfo is a client's state of one document.
type upClientDocInfo struct {
	Status    string `bson:"status"`
	ServerSeq int64  `bson:"server_seq"`
	ClientSeq int64  `bson:"client_seq"`
}

// upVersionVector is a row of versionvectors.
type upVersionVector struct {
	ClientID      primitive.ObjectID `bson:"client_id"`
	DocID         primitive.ObjectID `bson:"doc_id"`
	VersionVector bson.RawValue      `bson:"version_vector"`
}
