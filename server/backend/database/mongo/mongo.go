// Package mongo is a database.Database on a MongoDB-wire server: MongoDB
// itself or FerretDB.
//
// It uses no transactions and never relies on the atomicity of an update that
// reads what it writes ($inc, $max, conditional read-modify-write): FerretDB
// loses such updates when they race. Every decision that must hold under
// concurrency is taken by an insert that fails on a unique key:
//
//   - The change log stores one record per AppendChanges batch in the
//     changes collection. Its _id is (document, first server_seq), and the
//     collection is also unique by (doc_id, server_seq) and by
//     (doc_id, last_seq). A batch is accepted only if a stored batch ends
//     right before it, and records are never deleted while the document
//     lives. So every accepted batch extends the one before it, two batches
//     that extend the same one collide on the unique key, and the log is one
//     gapless chain. A batch is a single insert, so it is stored whole or not
//     at all and readers never see part of it.
//   - Owner epochs are records of the claims collection, unique by
//     (doc_id, epoch). The document's epoch is the highest claim. A write
//     checks it before storing anything; a claim inserts its record first and
//     then reads the highest, so of two racing claims the lower one fails.
//     A write that began before a newer claim returned may still land after
//     it: a batch then takes the server_seq the new owner would have used,
//     which the new owner learns as ErrConflict, so nothing is overwritten.
//   - The live document of a key in a project is named by a record of
//     doc_keys whose _id is made of the two (keyRecordID): creating a
//     document inserts it, so racing creators agree on one document;
//     removing the document deletes it.
//
// A document's ServerSeq and Epoch are therefore never stored as counters:
// they are read from the change log and the claims when a document is loaded.
// The document record only keeps a head hint, the end of some stored batch,
// from which the head is found by following batches by _id.
//
// Lookups on hot paths (a batch, a document, reading an attachment) go by
// _id: it is the only filter FerretDB's SQLite backend answers without
// reading the whole collection. Other queries use the indexes on MongoDB and
// scan on FerretDB; they serve small collections (claims, attachments on
// update) or rare calls (activation, listing attachments, LastClientSeq,
// ranges that do not start a batch).
//
// A batch is one BSON document, so it must stay under the 16 MB limit.
package mongo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/event"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"
	"go.mongodb.org/mongo-driver/x/mongo/driver"
	"go.mongodb.org/mongo-driver/x/mongo/driver/topology"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Defaults for Config fields left empty.
const (
	DefaultDatabase       = "yorkie-meta"
	DefaultConnectTimeout = 5 * time.Second
)

// Collection names.
const (
	colClients     = "clients"
	colDocuments   = "documents"
	colDocKeys     = "doc_keys"
	colClaims      = "claims"
	colAttachments = "attachments"
	colChanges     = "changes"
)

// Config says where the database lives.
type Config struct {
	// URI is a MongoDB connection string, e.g. mongodb://127.0.0.1:27017.
	URI string
	// Database is the database name; DefaultDatabase if empty.
	Database string
	// ConnectTimeout bounds connecting at Dial and how long a call waits for
	// a reachable server when its context has no earlier deadline.
	// DefaultConnectTimeout if zero.
	ConnectTimeout time.Duration
	// Logger receives the backend's own messages; slog.Default() if nil.
	Logger *slog.Logger
	// Monitor, when set, sees every command sent to the server: tests use
	// it to check that each query has an index.
	Monitor *event.CommandMonitor
}

// DB is a database.Database on MongoDB, safe for concurrent use.
type DB struct {
	client    *mongo.Client
	db        *mongo.Database
	log       *slog.Logger
	clientIDs *database.ClientIDs

	clients     *mongo.Collection
	documents   *mongo.Collection
	docKeys     *mongo.Collection
	claims      *mongo.Collection
	attachments *mongo.Collection
	changes     *mongo.Collection

	hints sync.WaitGroup // head hints raised after their appends returned

	snaps snapshotState // see snapshots.go; its zero value is ready
	revs  snapshotState // the codec of revisions' content (revisions.go)
}

var _ database.Database = (*DB)(nil)

// Dial connects to the server, checks that it answers and creates the
// indexes the backend relies on. An unreachable server is reported at once
// with an error wrapping database.ErrUnavailable. Later outages are not fatal:
// the driver reconnects by itself and calls succeed again.
func Dial(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.URI == "" {
		return nil, errors.New("mongo: no URI configured")
	}
	if cfg.Database == "" {
		cfg.Database = DefaultDatabase
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	log := cfg.Logger.With("component", "mongo", "database", cfg.Database)

	opts := options.Client().
		ApplyURI(cfg.URI).
		SetConnectTimeout(cfg.ConnectTimeout).
		SetServerSelectionTimeout(cfg.ConnectTimeout)
	if cfg.Monitor != nil {
		opts.SetMonitor(cfg.Monitor)
	}
	client, err := mongo.Connect(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: configure client: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := client.Ping(pingCtx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("mongo: reach server within %s: %w: %w", cfg.ConnectTimeout, database.ErrUnavailable, err)
	}

	mdb := client.Database(cfg.Database)
	db := &DB{
		client:      client,
		db:          mdb,
		log:         log,
		clientIDs:   database.NewClientIDs(nil),
		clients:     mdb.Collection(colClients),
		documents:   mdb.Collection(colDocuments),
		docKeys:     mdb.Collection(colDocKeys),
		claims:      mdb.Collection(colClaims),
		attachments: mdb.Collection(colAttachments),
		changes:     mdb.Collection(colChanges),
	}
	if err := errors.Join(db.ensureIndexes(ctx), db.ensureAccountIndexes(ctx), db.ensureRevisionIndexes(ctx), db.ensureSchemaIndexes(ctx)); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, err
	}
	if err := db.migrateProjects(ctx); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, err
	}
	log.Info("connected")
	return db, nil
}

// ensureIndexes creates the unique keys that arbitrate concurrent writers and
// the indexes the queries use. Creating an existing index is a no-op.
func (db *DB) ensureIndexes(ctx context.Context) error {
	// Indexes are named explicitly: FerretDB derives clashing names for
	// compound keys.
	unique := func(name string) *options.IndexOptions { return options.Index().SetName(name).SetUnique(true) }
	named := func(name string) *options.IndexOptions { return options.Index().SetName(name) }
	specs := []struct {
		col    *mongo.Collection
		models []mongo.IndexModel
	}{
		{db.clients, []mongo.IndexModel{
			{Keys: bson.D{{Key: "status", Value: 1}, {Key: "updated_at", Value: 1}}, Options: named("status_updated")},
		}},
		{db.documents, []mongo.IndexModel{
			{Keys: bson.D{{Key: "project_id", Value: 1}, {Key: "key", Value: 1}}, Options: named("project_key")},
		}},
		{db.claims, []mongo.IndexModel{
			{Keys: bson.D{{Key: "doc_id", Value: 1}, {Key: "epoch", Value: 1}}, Options: unique("doc_epoch_unique")},
		}},
		{db.attachments, []mongo.IndexModel{
			{Keys: bson.D{{Key: "client_id", Value: 1}, {Key: "doc_id", Value: 1}}, Options: unique("client_doc_unique")},
			{Keys: bson.D{{Key: "doc_id", Value: 1}, {Key: "status", Value: 1}}, Options: named("doc_status")},
			{Keys: bson.D{{Key: "client_id", Value: 1}, {Key: "status", Value: 1}}, Options: named("client_status")},
		}},
		{db.changes, []mongo.IndexModel{
			{Keys: bson.D{{Key: "doc_id", Value: 1}, {Key: "server_seq", Value: 1}}, Options: unique("doc_seq_unique")},
			{Keys: bson.D{{Key: "doc_id", Value: 1}, {Key: "last_seq", Value: 1}}, Options: unique("doc_last_seq_unique")},
		}},
	}
	// Client keys were unique once; every activation now makes a client.
	if db.hasIndex(ctx, db.clients, "key_unique") {
		if _, err := db.clients.Indexes().DropOne(ctx, "key_unique"); err != nil && db.hasIndex(ctx, db.clients, "key_unique") {
			return wrapErr("mongo: drop index key_unique of clients", err)
		}
	}
	for _, s := range specs {
		// Only missing indexes are created, one at a time: FerretDB fails on
		// a createIndexes that repeats some existing indexes.
		existing, err := s.col.Indexes().ListSpecifications(ctx)
		if err != nil {
			return wrapErr(fmt.Sprintf("mongo: list indexes of %s", s.col.Name()), err)
		}
		have := make(map[string]bool, len(existing))
		for _, e := range existing {
			have[e.Name] = true
		}
		for _, m := range s.models {
			name := *m.Options.Name
			if have[name] {
				continue
			}
			if _, err := s.col.Indexes().CreateOne(ctx, m); err != nil && !db.hasIndex(ctx, s.col, name) {
				// (Another node starting at the same time may have made it.)
				return wrapErr(fmt.Sprintf("mongo: create index %s of %s", name, s.col.Name()), err)
			}
		}
	}
	return nil
}

// migrateProjects gives the clients and documents stored before projects
// existed, which have no project_id, to the default project. Their doc_keys
// records need nothing: the default project's key records are the bare keys
// (keyRecordID). The update only sets a missing field, so nodes starting at
// the same time may all run it.
func (db *DB) migrateProjects(ctx context.Context) error {
	missing := bson.D{{Key: "project_id", Value: bson.D{{Key: "$exists", Value: false}}}}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "project_id", Value: database.DefaultProjectID}}}}
	for _, col := range []*mongo.Collection{db.clients, db.documents} {
		res, err := col.UpdateMany(ctx, missing, set)
		if err != nil {
			return wrapErr(fmt.Sprintf("mongo: give the %s stored before projects to the default project", col.Name()), err)
		}
		if res.ModifiedCount > 0 {
			db.log.Info("records stored before projects moved to the default project",
				"collection", col.Name(), "records", res.ModifiedCount)
		}
	}
	return nil
}

// hasIndex reports whether the collection has an index of that name.
func (db *DB) hasIndex(ctx context.Context, col *mongo.Collection, name string) bool {
	specs, err := col.Indexes().ListSpecifications(ctx)
	if err != nil {
		return false
	}
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// Close disconnects from the server.
func (db *DB) Close(ctx context.Context) error {
	db.hints.Wait()
	if err := db.client.Disconnect(ctx); err != nil {
		return wrapErr("mongo: disconnect", err)
	}
	return nil
}

// wrapErr adds context to a driver error and marks the ones that mean the
// server could not be reached, or did not answer in time, as
// database.ErrUnavailable.
func wrapErr(op string, err error) error {
	if unreachable(err) {
		return fmt.Errorf("%s: %w: %w", op, database.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func unreachable(err error) bool {
	var sel topology.ServerSelectionError
	// A pool the driver cleared after another call's connection broke: the
	// server went away while this call waited for a connection.
	var cleared driver.RetryablePoolError
	return errors.As(err, &sel) ||
		(errors.As(err, &cleared) && cleared.Retryable()) ||
		errors.Is(err, topology.ErrServerSelectionTimeout) ||
		errors.Is(err, topology.ErrTopologyClosed) ||
		errors.Is(err, mongo.ErrClientDisconnected) ||
		mongo.IsNetworkError(err) ||
		mongo.IsTimeout(err) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// now is the time stored in records, cut to the millisecond precision of
// BSON dates so that what a call returns equals what a later read returns.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Millisecond)
}
