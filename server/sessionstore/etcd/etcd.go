// Package etcd is the session store on an etcd cluster (v3 API).
//
// Layout under Config.Prefix (default "/yorkie/"):
//
//	members/<addr>/<lease ID, 16 hex digits>  -> {"addr":..,"incarnation":..}, attached to the node's lease
//	bindings/<document key>                   -> the owner, attached to the OWNER's lease
//	roles/<role>                              -> the holder, attached to the HOLDER's lease
//
// A node's incarnation is its etcd lease ID. Bind is one transaction that puts
// the binding only if the owner's member key exists and the binding key does
// not, and otherwise reads the winner; because the binding is attached to the
// owner's lease, it disappears with the owner. A binding's epoch is the mod
// revision of its key: the cluster's revision counter only grows, so a newer
// binding always has a larger epoch. Release deletes the key only if its mod
// revision and value are still the caller's.
//
// Leases are renewed by the store itself every TTL/3. A node reckons its
// lease to end one TTL after it SENT the last renewal that succeeded, never
// after it received the answer, so Done closes no later than etcd could
// expire the lease (up to the clocks' rate difference).
//
// Weaker points:
//   - A lease can outlive its TTL: when the etcd leader changes, the new
//     leader restarts the TTL of every lease, and expiry is checked on a
//     timer, not at the instant. Bindings of a dead node may therefore stay
//     in force for a TTL plus an election (and some hundred milliseconds)
//     after its last renewal. This delays takeover; it never lets two nodes
//     own a document, and the node's own Done is not delayed.
//   - TTLs are whole seconds, rounded up, and etcd raises a TTL below its
//     minimum (1.5 election timeouts: 2 s with default settings) to that
//     minimum. The store renews on the TTL etcd actually granted.
//   - Resolve and Bind are linearizable: each costs a round trip through the
//     etcd leader. There is no local cache.
//   - After a watch is compacted or fails, the member watch re-lists: a
//     consumer may miss intermediate events, never the final state.
package etcd

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "/yorkie/"

// Config holds the options of an etcd session store client.
type Config struct {
	// Endpoints are the etcd client URLs, e.g. "http://127.0.0.1:2379".
	Endpoints []string
	// DialTimeout is handed to the etcd client, which bounds connection
	// setup with it; zero means 5 s. Calls are bounded by their contexts.
	DialTimeout time.Duration
	// Prefix is put in front of every key; empty means DefaultPrefix.
	Prefix string
	// Logger receives lease losses and watch restarts; nil means slog.Default().
	Logger *slog.Logger
}

// Store is a client of the etcd session store; one per node.
type Store struct {
	cli      *clientv3.Client
	log      *slog.Logger
	members  string // key prefix of member records
	bindings string // key prefix of bindings
	roles    string // key prefix of roles
	secret   string // key of the cluster secret

	// ctx ends when the store is closed; background work derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool
	wg     sync.WaitGroup // member watches

	mu     sync.Mutex
	leases map[*lease]struct{}
}

var _ sessionstore.Store = (*Store)(nil)

// New connects to etcd. It does not wait for the cluster to answer; the
// first call does.
func New(cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd session store: no endpoints configured")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		// Detect a dead connection to a member that vanished without a FIN.
		// etcd refuses pings more often than every 5 s.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd session store: connect to %v: %w: %w", cfg.Endpoints, sessionstore.ErrUnavailable, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{
		cli:      cli,
		log:      log.With("component", "sessionstore/etcd"),
		members:  cfg.Prefix + "members/",
		bindings: cfg.Prefix + "bindings/",
		roles:    cfg.Prefix + "roles/",
		secret:   cfg.Prefix + "cluster-secret",
		ctx:      ctx,
		cancel:   cancel,
		leases:   make(map[*lease]struct{}),
	}, nil
}

// record is the stored form of a member, in member records and bindings.
type record struct {
	Addr        string `json:"addr"`
	Incarnation int64  `json:"incarnation"`
}

func encode(m sessionstore.Member) string {
	b, _ := json.Marshal(record{Addr: m.Addr, Incarnation: m.Incarnation})
	return string(b)
}

func decode(key string, v []byte) (sessionstore.Member, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil || r.Addr == "" || r.Incarnation <= 0 {
		return sessionstore.Member{}, fmt.Errorf("etcd session store: record at %q: %q: %w", key, v, sessionstore.ErrMalformed)
	}
	return sessionstore.Member{Addr: r.Addr, Incarnation: r.Incarnation}, nil
}

func (s *Store) memberKey(m sessionstore.Member) string {
	return s.members + m.Addr + "/" + fmt.Sprintf("%016x", m.Incarnation)
}

func (s *Store) bindingKey(key string) string { return s.bindings + key }

// ClusterSecret implements sessionstore.Store: the first caller's random
// secret is stored if the key is absent, and every caller gets the winner.
func (s *Store) ClusterSecret(ctx context.Context) (string, error) {
	const op = "cluster secret"
	if err := s.check(ctx, op); err != nil {
		return "", err
	}
	mine := rand.Text()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(s.secret), "=", 0)).
		Then(clientv3.OpPut(s.secret, mine)).
		Else(clientv3.OpGet(s.secret)).
		Commit()
	if err != nil {
		return "", s.fail(ctx, op, err)
	}
	if resp.Succeeded {
		return mine, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 || len(kvs[0].Value) == 0 {
		return "", fmt.Errorf("etcd session store: %s at %q: %w", op, s.secret, sessionstore.ErrMalformed)
	}
	return string(kvs[0].Value), nil
}

// check fails a call whose context has ended or whose store is closed,
// before anything is sent.
func (s *Store) check(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcd session store: %s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("etcd session store: %s: %w", op, fault.ErrShuttingDown)
	}
	return nil
}

// fail wraps an error of a call to etcd. A deadline that passed while waiting
// for etcd and an unreachable or leaderless cluster are ErrUnavailable.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if s.closed.Load() {
		return fmt.Errorf("etcd session store: %s: %w: %w", op, fault.ErrShuttingDown, err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = errors.Join(ctxErr, err)
		}
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("etcd session store: %s: %w: %w", op, sessionstore.ErrUnavailable, err)
		}
		return fmt.Errorf("etcd session store: %s: %w", op, err)
	}
	if unavailable(err) {
		return fmt.Errorf("etcd session store: %s: %w: %w", op, sessionstore.ErrUnavailable, err)
	}
	return fmt.Errorf("etcd session store: %s: %w", op, err)
}

// unavailable reports whether err says etcd could not be reached or could
// not serve the request for now (no leader, timeout, stopping member).
func unavailable(err error) bool {
	var code codes.Code
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		code = ee.Code()
	} else if se := (interface{ GRPCStatus() *status.Status })(nil); errors.As(err, &se) {
		st := se.GRPCStatus()
		code = st.Code()
		// The call's deadline, which etcd was sent, ran out at etcd just
		// before it did here (waiting on an election, say): etcd answers
		// that as an unknown error naming the deadline.
		if code == codes.Unknown && st.Message() == context.DeadlineExceeded.Error() {
			return true
		}
	}
	return code == codes.Unavailable || code == codes.DeadlineExceeded ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, clientv3.ErrNoAvailableEndpoints)
}

// Register grants a lease, writes the member record under it and renews the
// lease in the background until it is revoked, lost, or the store is closed.
func (s *Store) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	op := "register " + addr
	if err := s.check(ctx, op); err != nil {
		return nil, err
	}
	if addr == "" || strings.Contains(addr, "/") || ttl <= 0 {
		return nil, fmt.Errorf("etcd session store: %s with TTL %v: need an address without '/' and a positive TTL", op, ttl)
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	sent := time.Now()
	grant, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	m := sessionstore.Member{Addr: addr, Incarnation: int64(grant.ID)}
	if _, err := s.cli.Put(ctx, s.memberKey(m), encode(m), clientv3.WithLease(grant.ID)); err != nil {
		// Leave nothing behind: the lease would only expire on its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_, _ = s.cli.Revoke(rctx, grant.ID)
		cancel()
		return nil, s.fail(ctx, op, err)
	}

	l := &lease{
		s:      s,
		member: m,
		id:     grant.ID,
		ttl:    time.Duration(grant.TTL) * time.Second,
		done:   make(chan struct{}),
	}
	l.deadline.Store(sent.Add(l.ttl).UnixNano())
	l.stopCtx, l.stop = context.WithCancel(context.Background())

	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		l.stop()
		l.end("")
		return nil, fmt.Errorf("etcd session store: %s: %w", op, fault.ErrShuttingDown)
	}
	s.leases[l] = struct{}{}
	s.mu.Unlock()
	go l.keepAlive()
	return l, nil
}

// Members lists the live members, ordered by address and incarnation.
func (s *Store) Members(ctx context.Context) ([]sessionstore.Member, error) {
	const op = "list members"
	if err := s.check(ctx, op); err != nil {
		return nil, err
	}
	resp, err := s.cli.Get(ctx, s.members, clientv3.WithPrefix())
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	ms := make([]sessionstore.Member, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m, err := decode(string(kv.Key), kv.Value)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, compareMembers)
	return ms, nil
}

func compareMembers(a, b sessionstore.Member) int {
	if c := strings.Compare(a.Addr, b.Addr); c != 0 {
		return c
	}
	switch {
	case a.Incarnation < b.Incarnation:
		return -1
	case a.Incarnation > b.Incarnation:
		return 1
	}
	return 0
}

// Resolve returns the binding of key; a binding exists only while its
// owner's lease does.
func (s *Store) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	op := "resolve " + strconv.Quote(key)
	if err := s.check(ctx, op); err != nil {
		return sessionstore.Binding{}, false, err
	}
	resp, err := s.cli.Get(ctx, s.bindingKey(key))
	if err != nil {
		return sessionstore.Binding{}, false, s.fail(ctx, op, err)
	}
	if len(resp.Kvs) == 0 {
		return sessionstore.Binding{}, false, nil
	}
	b, err := s.binding(key, resp.Kvs[0])
	if err != nil {
		return sessionstore.Binding{}, false, err
	}
	return b, true, nil
}

func (s *Store) binding(key string, kv *mvccpb.KeyValue) (sessionstore.Binding, error) {
	owner, err := decode(string(kv.Key), kv.Value)
	if err != nil {
		return sessionstore.Binding{}, err
	}
	return sessionstore.Binding{Key: key, Owner: owner, Epoch: kv.ModRevision}, nil
}

// Bind puts the binding under the owner's lease if the owner is a member and
// key is unbound, in one transaction; otherwise it returns the winner.
func (s *Store) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	op := fmt.Sprintf("bind %q to %s/%x", key, owner.Addr, owner.Incarnation)
	if err := s.check(ctx, op); err != nil {
		return sessionstore.Binding{}, err
	}
	if owner.Addr == "" || strings.Contains(owner.Addr, "/") || owner.Incarnation <= 0 {
		return sessionstore.Binding{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
	}
	mkey, bkey := s.memberKey(owner), s.bindingKey(key)
	// Both conditions are read in the transaction's snapshot, so if it fails
	// the reads below say why. A second round is only a guard.
	for range 3 {
		resp, err := s.cli.Txn(ctx).
			If(
				clientv3.Compare(clientv3.CreateRevision(mkey), ">", 0),
				clientv3.Compare(clientv3.CreateRevision(bkey), "=", 0),
			).
			Then(clientv3.OpPut(bkey, encode(owner), clientv3.WithLease(clientv3.LeaseID(owner.Incarnation)))).
			Else(clientv3.OpGet(mkey, clientv3.WithKeysOnly()), clientv3.OpGet(bkey)).
			Commit()
		if err != nil {
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return sessionstore.Binding{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
			}
			return sessionstore.Binding{}, s.fail(ctx, op, err)
		}
		if resp.Succeeded {
			return sessionstore.Binding{Key: key, Owner: owner, Epoch: resp.Header.Revision}, nil
		}
		if len(resp.Responses) != 2 {
			return sessionstore.Binding{}, fmt.Errorf("etcd session store: %s: %d answers to 2 reads: %w", op, len(resp.Responses), sessionstore.ErrMalformed)
		}
		if len(resp.Responses[0].GetResponseRange().GetKvs()) == 0 {
			return sessionstore.Binding{}, fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotMember)
		}
		if kvs := resp.Responses[1].GetResponseRange().GetKvs(); len(kvs) > 0 {
			return s.binding(key, kvs[0])
		}
	}
	return sessionstore.Binding{}, fmt.Errorf("etcd session store: %s: transaction failed without a reason", op)
}

// Release deletes b only if the key still holds exactly b (same write, same owner).
func (s *Store) Release(ctx context.Context, b sessionstore.Binding) error {
	op := fmt.Sprintf("release %q at epoch %d", b.Key, b.Epoch)
	if err := s.check(ctx, op); err != nil {
		return err
	}
	bkey := s.bindingKey(b.Key)
	resp, err := s.cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.ModRevision(bkey), "=", b.Epoch),
			clientv3.Compare(clientv3.Value(bkey), "=", encode(b.Owner)),
		).
		Then(clientv3.OpDelete(bkey)).
		Commit()
	if err != nil {
		return s.fail(ctx, op, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd session store: %s: %w", op, sessionstore.ErrNotOwner)
	}
	return nil
}

// Close stops renewing this client's leases (they run out after their TTL;
// their Done closes then), ends its member watches and disconnects.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Swap(true) {
		s.mu.Unlock()
		return nil
	}
	leases := s.leases
	s.leases = nil
	s.mu.Unlock()
	for l := range leases {
		l.stop()
	}
	s.cancel()
	s.wg.Wait()
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd session store: close: %w", err)
	}
	return nil
}
