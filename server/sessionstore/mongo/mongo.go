package mongo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/mongo/readpref"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Defaults for the zero values of Config.
const (
	DefaultDatabase        = "yorkie-meta"
	DefaultPrefix          = "session_"
	DefaultCommandTimeout  = 2 * time.Second
	DefaultWatchInterval   = 250 * time.Millisecond
	DefaultTakeoverTimeout = 3 * time.Second
)

// markerRetention is how long takeover markers are kept (see the package
// comment).
const markerRetention = 10 * time.Minute

// Config configures a Store. The zero value of every field but URI means its
// default.
type Config struct {
	// URI is the MongoDB connection string.
	URI string
	// Database holds the store's collections (default "yorkie-meta", the
	// server's own database).
	Database string
	// Prefix starts the name of every collection of the store (default
	// "session_"), so several clusters can share one database.
	Prefix string
	// CommandTimeout bounds a call whose context has no deadline, and
	// connecting (default 2s).
	CommandTimeout time.Duration
	// WatchInterval is how often WatchMembers re-reads the members (default
	// 250ms).
	WatchInterval time.Duration
	// TakeoverTimeout is how long a takeover marker whose holder has not
	// replaced the slot keeps others from trying again (default 3s).
	TakeoverTimeout time.Duration
	// Logger receives lease losses and watch errors (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.WatchInterval <= 0 {
		c.WatchInterval = DefaultWatchInterval
	}
	if c.TakeoverTimeout <= 0 {
		c.TakeoverTimeout = DefaultTakeoverTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Store is the MongoDB session store. It is safe for concurrent use.
type Store struct {
	cfg    Config
	log    *slog.Logger
	client *mongo.Client

	counter, members, bindings, roles, markers, meta *mongo.Collection

	obs                     *observer
	own                     sync.Map // memberID -> *lease of this client's live leases
	bindingSlots, roleSlots *slots
	// draws counts counter values drawn, to prune the counter now and then.
	draws atomic.Int64
	// takeovers counts markers inserted, to prune them now and then.
	takeovers atomic.Int64
	// kick wakes this client's watches after its own registrations and
	// revocations.
	kickMu sync.Mutex
	kicks  map[chan struct{}]struct{}

	// base is cancelled by Close; leases and watches stop with it.
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // orders spawn against Close
	wg     sync.WaitGroup
	closed atomic.Bool
}

var _ sessionstore.Store = (*Store)(nil)

// New connects to the server and returns a Store. It fails, wrapping
// sessionstore.ErrUnavailable, if the server does not answer before ctx ends
// or CommandTimeout passes.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.URI == "" {
		return nil, errors.New("mongo session store: no URI configured")
	}
	cfg = cfg.withDefaults()
	client, err := mongo.Connect(ctx, options.Client().ApplyURI(cfg.URI).
		SetConnectTimeout(cfg.CommandTimeout).
		SetServerSelectionTimeout(cfg.CommandTimeout))
	if err != nil {
		return nil, fmt.Errorf("mongo session store: configure client: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.CommandTimeout)
	defer cancel()
	if err := client.Ping(pingCtx, readpref.Primary()); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("mongo session store: reach server: %w: %w", sessionstore.ErrUnavailable, err)
	}
	db := client.Database(cfg.Database)
	s := &Store{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "sessionstore.mongo"),
		client:   client,
		counter:  db.Collection(cfg.Prefix + "counter"),
		members:  db.Collection(cfg.Prefix + "members"),
		bindings: db.Collection(cfg.Prefix + "bindings"),
		roles:    db.Collection(cfg.Prefix + "roles"),
		markers:  db.Collection(cfg.Prefix + "markers"),
		meta:     db.Collection(cfg.Prefix + "meta"),
		obs:      newObserver(),
		kicks:    map[chan struct{}]struct{}{},
	}
	s.bindingSlots = newSlots(s, s.bindings)
	s.roleSlots = newSlots(s, s.roles)
	s.base, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the store's leases (their Done channels close; their records
// are declared dead by others after the TTL) and watches, and disconnects.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if err := s.client.Disconnect(context.Background()); err != nil {
		return fmt.Errorf("mongo session store: disconnect: %w", err)
	}
	return nil
}

// spawn runs fn in a goroutine that Close waits for; it returns false, and
// does not run fn, if the store is closed.
func (s *Store) spawn(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// begin checks that a call may start and bounds ctx by CommandTimeout when
// it has no deadline. Nothing is sent once ctx has ended, so a failed call
// leaves nothing behind.
func (s *Store) begin(ctx context.Context, op string) (context.Context, context.CancelFunc, error) {
	if s.closed.Load() {
		return nil, nil, fmt.Errorf("mongo %s: %w", op, fault.ErrShuttingDown)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("mongo %s: %w: %w", op, sessionstore.ErrUnavailable, err)
	}
	if _, ok := ctx.Deadline(); ok {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	return ctx, cancel, nil
}

// wrapErr maps a driver error to the store's sentinel errors.
func (s *Store) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if s.closed.Load() {
		return fmt.Errorf("mongo %s: %w", op, fault.ErrShuttingDown)
	}
	if errors.Is(err, sessionstore.ErrMalformed) || errors.Is(err, sessionstore.ErrNotMember) ||
		errors.Is(err, sessionstore.ErrNotOwner) || errors.Is(err, sessionstore.ErrUnavailable) {
		return fmt.Errorf("mongo %s: %w", op, err)
	}
	// Connection failures, timeouts, the caller's deadline and server errors
	// alike: the store cannot answer.
	return fmt.Errorf("mongo %s: %w: %w", op, sessionstore.ErrUnavailable, err)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// counterDoc is one drawn value of the store-wide counter.
type counterDoc struct {
	ID int64 `bson:"_id"`
}

// top returns the largest value of the counter, 0 if none.
func (s *Store) top(ctx context.Context) (int64, error) {
	var d counterDoc
	err := s.counter.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return d.ID, err
}

// pruneAge is how far below the largest value (in microseconds, the unit of
// the clock floor) the counter's records are pruned.
const pruneAge = int64(time.Minute / time.Microsecond)

// next draws a value of the store-wide counter above every value drawn
// before it started, above floor, and not below the clock in microseconds.
//
// The largest record is never pruned, so the largest value read covers
// every value drawn before; the insert makes the value unique. Records a
// minute (of the clock floor) below the largest are pruned: a value could
// only be drawn twice by a caller that stalled between its read and its
// insert for that long, after others pruned the value.
func (s *Store) next(ctx context.Context, floor int64) (int64, error) {
	for {
		cur, err := s.top(ctx)
		if err != nil {
			return 0, err
		}
		v := max(cur+1, floor, time.Now().UnixMicro())
		if _, err := s.counter.InsertOne(ctx, counterDoc{ID: v}); err != nil {
			if mongo.IsDuplicateKeyError(err) {
				continue
			}
			return 0, err
		}
		if s.draws.Add(1)%64 == 0 {
			if _, err := s.counter.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: cur - pruneAge}}}}); err != nil {
				s.log.Debug("pruning the counter failed", "err", err)
			}
		}
		return v, nil
	}
}

// metaDoc is a record of the meta collection.
type metaDoc struct {
	ID    string `bson:"_id"`
	Value string `bson:"value"`
}

const secretID = "cluster-secret"

// ClusterSecret implements sessionstore.Store: the first insert of a random
// secret wins and every caller reads the winner.
func (s *Store) ClusterSecret(ctx context.Context) (string, error) {
	ctx, cancel, err := s.begin(ctx, "cluster secret")
	if err != nil {
		return "", err
	}
	defer cancel()
	if _, err := s.meta.InsertOne(ctx, metaDoc{ID: secretID, Value: rand.Text()}); err != nil && !mongo.IsDuplicateKeyError(err) {
		return "", s.wrapErr("cluster secret", err)
	}
	var d metaDoc
	if err := s.meta.FindOne(ctx, bson.D{{Key: "_id", Value: secretID}}).Decode(&d); err != nil {
		return "", s.wrapErr("cluster secret", err)
	}
	if d.Value == "" {
		return "", fmt.Errorf("mongo cluster secret: empty: %w", sessionstore.ErrMalformed)
	}
	return d.Value, nil
}
