package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediocregopher/radix/v4"
	"github.com/mediocregopher/radix/v4/resp/resp3"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Defaults for the zero values of Config.
const (
	DefaultPrefix         = "yorkie:"
	DefaultPoolSize       = 4
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 2 * time.Second
	DefaultWatchInterval  = 500 * time.Millisecond
)

// Config configures a Store. The zero value of every field but Addr means its
// default.
type Config struct {
	// Addr is the Redis address, host:port or a redis:// URL (which may carry
	// a password and a database number).
	Addr string
	// Prefix starts every key and channel of the store (default "yorkie:"),
	// so several clusters can share one Redis.
	Prefix string
	// PoolSize is the number of pooled connections (default 4).
	PoolSize int
	// DialTimeout bounds each connection attempt (default 2s).
	DialTimeout time.Duration
	// CommandTimeout bounds a call whose context has no deadline (default 2s).
	CommandTimeout time.Duration
	// WatchInterval is how often WatchMembers re-reads the members to notice
	// expired leases (default 500ms); joins and revocations are also
	// announced on a pub/sub channel and seen at once.
	WatchInterval time.Duration
	// KeepConnOnReadOnly turns off the READONLY recovery, which is on by
	// default (the zero value): normally a pooled connection that answers
	// READONLY (a master demoted to a replica behind the same address) is
	// closed, so the pool dials again and reaches the current master. When
	// true the pool keeps such connections, as radix does by default, and
	// writes keep failing until the demoted server closes them.
	KeepConnOnReadOnly bool
	// Logger receives lease losses, READONLY recoveries and watch errors
	// (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.PoolSize <= 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.WatchInterval <= 0 {
		c.WatchInterval = DefaultWatchInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Store is the Redis session store. It is safe for concurrent use.
type Store struct {
	cfg     Config
	log     *slog.Logger
	pool    radix.Client
	dialer  radix.Dialer // plain connections, for pub/sub
	scripts scripts

	counterKey, membersKey, memberPrefix, bindingPrefix, channel, secretKey string

	// base is cancelled by Close; leases and watches stop with it.
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // orders spawn against Close
	wg     sync.WaitGroup
	closed atomic.Bool

	// readOnlyDiscards counts connections closed because they answered READONLY.
	readOnlyDiscards atomic.Int64
	// withdrawnTries counts tries withdrawn while waiting for a connection.
	withdrawnTries atomic.Int64
	// viaWithConn runs every command through radix.WithConn (the pool's
	// exclusive path) instead of the shared path; tests set it to cover both.
	viaWithConn bool
}

var _ sessionstore.Store = (*Store)(nil)

// New connects to Redis and returns a Store. It fails (wrapping
// sessionstore.ErrUnavailable) if no connection can be made before ctx ends.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Addr == "" {
		return nil, errors.New("redis session store: no address configured")
	}
	cfg = cfg.withDefaults()
	s := &Store{
		cfg:           cfg,
		log:           cfg.Logger.With("component", "sessionstore.redis"),
		scripts:       newScripts(),
		counterKey:    cfg.Prefix + "counter",
		membersKey:    cfg.Prefix + "members",
		memberPrefix:  cfg.Prefix + "member:",
		bindingPrefix: cfg.Prefix + "binding:",
		channel:       cfg.Prefix + "members:events",
		secretKey:     cfg.Prefix + "cluster-secret",
	}
	plain := radix.Dialer{NetDialer: &net.Dialer{Timeout: cfg.DialTimeout}}
	s.dialer = radix.Dialer{CustomConn: func(ctx context.Context, network, addr string) (radix.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
		return plain.Dial(ctx, network, addr)
	}}
	pooled := radix.Dialer{CustomConn: func(ctx context.Context, network, addr string) (radix.Conn, error) {
		c, err := s.dialer.Dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &guardedConn{Conn: c, discardOnReadOnly: !cfg.KeepConnOnReadOnly, discarded: s.discarded}, nil
	}}
	pool, err := radix.PoolConfig{
		Dialer: pooled,
		Size:   cfg.PoolSize,
		// Replace discarded connections quickly (radix waits 125ms between
		// re-dials by default); failed dials still back off up to 4s.
		MinReconnectInterval: 20 * time.Millisecond,
		MaxReconnectInterval: 4 * time.Second,
	}.New(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("redis session store: connect to %s: %w: %w", redactAddr(cfg.Addr), sessionstore.ErrUnavailable, err)
	}
	s.pool = pool
	s.base, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// discarded records a connection closed for READONLY.
func (s *Store) discarded(reply string) {
	n := s.readOnlyDiscards.Add(1)
	s.log.Warn("closed a pooled connection to a read-only replica; the pool re-dials",
		"addr", redactAddr(s.cfg.Addr), "reply", reply, "total", n)
}

// Close stops the store's leases (their Done channels close; their member keys
// expire in Redis after the TTL) and watches, and closes the connections.
func (s *Store) Close() error {
	s.mu.Lock()
	if !s.closed.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if err := s.pool.Close(); err != nil {
		return fmt.Errorf("redis session store: close pool: %w", err)
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

// do runs a, bounded by CommandTimeout when ctx has no deadline. It sends
// nothing if ctx has already ended (radix could still write the command, and
// a call that fails must leave nothing behind).
func (s *Store) do(ctx context.Context, a radix.Action) error {
	if s.closed.Load() {
		return fault.ErrShuttingDown
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.CommandTimeout)
		defer cancel()
	}
	if s.viaWithConn {
		return s.pool.Do(ctx, radix.WithConn("", func(ctx context.Context, c radix.Conn) error {
			return c.Do(ctx, a)
		}))
	}
	return s.doShared(ctx, a)
}

// wrapErr maps a radix error to the store's sentinel errors.
func (s *Store) wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, fault.ErrShuttingDown) || s.closed.Load() {
		return fmt.Errorf("redis %s: %w", op, fault.ErrShuttingDown)
	}
	var ro *ReadOnlyError
	if errors.As(err, &ro) {
		return fmt.Errorf("redis %s: %w: %w", op, sessionstore.ErrUnavailable, err)
	}
	var reply string
	var se resp3.SimpleError
	var be resp3.BlobError
	switch {
	case errors.As(err, &se):
		reply = se.S
	case errors.As(err, &be):
		reply = string(be.B)
	default:
		// Connection failures, timeouts and the caller's deadline.
		return fmt.Errorf("redis %s: %w: %w", op, sessionstore.ErrUnavailable, err)
	}
	code, _, _ := strings.Cut(reply, " ")
	switch code {
	case "WRONGTYPE":
		return fmt.Errorf("redis %s: %w: %w", op, sessionstore.ErrMalformed, err)
	case "READONLY", "LOADING", "MASTERDOWN", "TRYAGAIN", "BUSY", "CLUSTERDOWN", "NOREPLICAS":
		return fmt.Errorf("redis %s: %w: %w", op, sessionstore.ErrUnavailable, err)
	}
	return fmt.Errorf("redis %s: %w", op, err)
}

// memberID names one registration: "<incarnation>:<addr>".
func memberID(m sessionstore.Member) string {
	return strconv.FormatInt(m.Incarnation, 10) + ":" + m.Addr
}

func (s *Store) memberKey(m sessionstore.Member) string { return s.memberPrefix + memberID(m) }

func (s *Store) bindingKey(key string) string { return s.bindingPrefix + key }

// ClusterSecret implements sessionstore.Store: SET NX keeps the first
// caller's random secret and GET returns the winner, in one script.
func (s *Store) ClusterSecret(ctx context.Context) (string, error) {
	var secret string
	err := s.do(ctx, s.scripts.secret.Cmd(&secret, []string{s.secretKey}, rand.Text()))
	if err != nil {
		return "", s.wrapErr("cluster secret", err)
	}
	if secret == "" {
		return "", fmt.Errorf("redis cluster secret at %q: empty: %w", s.secretKey, sessionstore.ErrMalformed)
	}
	return secret, nil
}

// Members implements sessionstore.Store.
func (s *Store) Members(ctx context.Context) ([]sessionstore.Member, error) {
	var ids []string
	err := s.do(ctx, s.scripts.members.Cmd(&ids, []string{s.membersKey}, s.memberPrefix))
	if err != nil {
		return nil, s.wrapErr("members", err)
	}
	out := make([]sessionstore.Member, 0, len(ids))
	for _, id := range ids {
		incText, addr, ok := strings.Cut(id, ":")
		inc, err := strconv.ParseInt(incText, 10, 64)
		if !ok || err != nil || addr == "" {
			return nil, fmt.Errorf("redis members: member id %q: %w", id, sessionstore.ErrMalformed)
		}
		out = append(out, sessionstore.Member{Addr: addr, Incarnation: inc})
	}
	return out, nil
}

// Bind implements sessionstore.Store.
func (s *Store) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	var res []string
	err := s.do(ctx, s.scripts.bind.Cmd(&res,
		[]string{s.bindingKey(key), s.counterKey, s.memberKey(owner)},
		s.memberPrefix, owner.Addr, strconv.FormatInt(owner.Incarnation, 10)))
	if err != nil {
		return sessionstore.Binding{}, s.wrapErr("bind "+strconv.Quote(key), err)
	}
	if len(res) == 1 && res[0] == "notmember" {
		return sessionstore.Binding{}, fmt.Errorf("redis bind %q to %s#%d: %w", key, owner.Addr, owner.Incarnation, sessionstore.ErrNotMember)
	}
	b, ok, err := parseBinding(key, res)
	if err != nil {
		return sessionstore.Binding{}, fmt.Errorf("redis bind %q: %w", key, err)
	}
	if !ok {
		return sessionstore.Binding{}, fmt.Errorf("redis bind %q: no binding in reply: %w", key, sessionstore.ErrMalformed)
	}
	return b, nil
}

// Resolve implements sessionstore.Store.
func (s *Store) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	var res []string
	err := s.do(ctx, s.scripts.resolve.Cmd(&res, []string{s.bindingKey(key)}, s.memberPrefix))
	if err != nil {
		return sessionstore.Binding{}, false, s.wrapErr("resolve", err)
	}
	b, ok, err := parseBinding(key, res)
	if err != nil {
		return sessionstore.Binding{}, false, fmt.Errorf("redis resolve %q: %w", key, err)
	}
	return b, ok, nil
}

// parseBinding reads a bind or resolve script reply.
func parseBinding(key string, res []string) (sessionstore.Binding, bool, error) {
	switch {
	case len(res) == 1 && res[0] == "none":
		return sessionstore.Binding{}, false, nil
	case len(res) == 4 && res[0] == "ok":
	default:
		return sessionstore.Binding{}, false, fmt.Errorf("binding record %v: %w", res, sessionstore.ErrMalformed)
	}
	inc, err1 := strconv.ParseInt(res[2], 10, 64)
	epoch, err2 := strconv.ParseInt(res[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return sessionstore.Binding{}, false, fmt.Errorf("binding record: %w: %w", sessionstore.ErrMalformed, err)
	}
	return sessionstore.Binding{
		Key:   key,
		Owner: sessionstore.Member{Addr: res[1], Incarnation: inc},
		Epoch: epoch,
	}, true, nil
}

// Release implements sessionstore.Store.
func (s *Store) Release(ctx context.Context, b sessionstore.Binding) error {
	var res string
	err := s.do(ctx, s.scripts.release.Cmd(&res, []string{s.bindingKey(b.Key)},
		b.Owner.Addr, strconv.FormatInt(b.Owner.Incarnation, 10), strconv.FormatInt(b.Epoch, 10), s.memberPrefix))
	if err != nil {
		return s.wrapErr("release", err)
	}
	switch res {
	case "ok":
		return nil
	case "notowner":
		return fmt.Errorf("redis release %q epoch %d: %w", b.Key, b.Epoch, sessionstore.ErrNotOwner)
	default:
		return fmt.Errorf("redis release %q: record %q: %w", b.Key, res, sessionstore.ErrMalformed)
	}
}

// redactAddr drops a password from a redis:// URL for logs and errors.
func redactAddr(addr string) string {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return addr
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		return scheme + "://***@" + rest[at+1:]
	}
	return addr
}
