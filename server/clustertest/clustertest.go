// Package clustertest runs several server nodes inside one test process as
// one cluster: they share a memory session store and a memory database, so a
// test can watch documents move between owners while it starts, stops,
// crashes and partitions nodes.
//
// Every node listens on its own loopback port and is reached over the real
// wire protocols, exactly as a client behind a load balancer would reach it.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	dbmemory "github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// Timeouts of the harness. They only end runs that are already broken.
const (
	// StopTimeout bounds a graceful shutdown of one node.
	StopTimeout = 10 * time.Second
	// WaitTimeout bounds the harness's waits for the cluster to settle.
	WaitTimeout = 10 * time.Second
)

// ErrNoOwner: the session store has no live binding for the document.
var ErrNoOwner = errors.New("document has no live owner")

// Option configures a Cluster.
type Option func(*options)

type options struct {
	mode    routing.Mode
	ttl     time.Duration
	configs []func(i int, cfg *server.Config)
	seams   []func(i int) []server.Option
}

// WithMode sets the affinity mode of every node (default routing.Forward).
func WithMode(mode routing.Mode) Option {
	return func(o *options) { o.mode = mode }
}

// WithNodeTTL sets the lease TTL of every node. Tests of crashes want a short
// one, such as 500 ms, so that documents move quickly.
func WithNodeTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithConfig applies f to the Config of every node before it starts; i is
// the node's index. The harness sets the store, the database, the host, the
// mode and the TTL first, so f may override them.
func WithConfig(f func(i int, cfg *server.Config)) Option {
	return func(o *options) { o.configs = append(o.configs, f) }
}

// WithSeams builds every node with the test seams f returns (say,
// server.WithClock); i is the node's index.
func WithSeams(f func(i int) []server.Option) Option {
	return func(o *options) { o.seams = append(o.seams, f) }
}

// Cluster is a set of in-process nodes sharing one session store and one
// database. Nodes, Running, Node, OwnerOf, Store and DB are safe from any
// goroutine; the other methods may fail the test and belong to the test
// goroutine.
type Cluster struct {
	t     testing.TB
	opts  options
	store *memory.Store
	db    database.Database

	mu    sync.Mutex
	nodes []*Node
}

// Start starts n nodes on 127.0.0.1 with free ports and waits until every
// node sees all n as members. Everything is shut down when the test ends.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	o := options{mode: routing.Forward}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cluster{
		t:     t,
		opts:  o,
		store: memory.New(memory.Config{Logger: slog.New(slog.DiscardHandler)}),
		db:    dbmemory.New(),
	}
	t.Cleanup(c.close)
	for range n {
		c.Add()
	}
	c.WaitMembers(n)
	return c
}

// Store returns the session store the nodes share.
func (c *Cluster) Store() *memory.Store { return c.store }

// DB returns the database the nodes share, for checking what they stored.
func (c *Cluster) DB() database.Database { return c.db }

// Add starts one more node and returns it. It does not wait for the other
// nodes to see it; call WaitMembers for that.
func (c *Cluster) Add() *Node {
	c.t.Helper()
	c.mu.Lock()
	i := len(c.nodes)
	c.mu.Unlock()
	client := &nodeStore{Client: c.store.Client()}
	cfg := server.Config{
		RPCConfig:       server.RPCConfig{Host: "127.0.0.1"},
		ProfilingConfig: server.ProfilingConfig{ProfilingPort: -1},
		BackendConfig:   server.BackendConfig{DB: c.db},
		ClusterConfig: server.ClusterConfig{
			SessionStore: client, AffinityMode: c.opts.mode, NodeTTL: c.opts.ttl,
			// Stop is the plain graceful stop the tests of moves after a
			// release expect; drain tests turn the drain on with WithConfig.
			ShutdownDrainTimeout: -1,
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range c.opts.configs {
		f(i, &cfg)
	}
	var seams []server.Option
	for _, f := range c.opts.seams {
		seams = append(seams, f(i)...)
	}
	srv, err := server.New(context.Background(), cfg, seams...)
	if err != nil {
		_ = client.Close()
		c.t.Fatalf("create node %d: %v", i, err)
	}
	if err := srv.Start(context.Background()); err != nil {
		_ = srv.Shutdown(context.Background())
		_ = client.Close()
		c.t.Fatalf("start node %d: %v", i, err)
	}
	node := &Node{
		t:       c.t,
		index:   i,
		srv:     srv,
		addr:    srv.Affinity().Addr(),
		client:  client,
		clients: map[servertest.Protocol]v1connect.YorkieServiceClient{},
	}
	c.mu.Lock()
	c.nodes = append(c.nodes, node)
	c.mu.Unlock()
	return node
}

// Nodes returns every node started so far, stopped ones included, in the
// order they were started.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Running returns the nodes that are neither stopped nor aborted (a
// partitioned node is still running).
func (c *Cluster) Running() []*Node {
	var out []*Node
	for _, n := range c.Nodes() {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the i-th node started.
func (c *Cluster) Node(i int) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.nodes) {
		c.t.Fatalf("clustertest: no node %d (cluster has %d)", i, len(c.nodes))
	}
	return c.nodes[i]
}

// Stop shuts node i down gracefully: it releases its bindings and ends its
// Watch streams with code unavailable.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	n := c.Node(i)
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if err := n.stop(ctx); err != nil {
		c.t.Errorf("stop node %d: %v", i, err)
	}
}

// Abort crashes node i: its connections drop and nothing is released, so
// its documents stay bound to it until its lease runs out after the TTL.
func (c *Cluster) Abort(i int) {
	c.Node(i).abort()
}

// Partition cuts node i off the session store while the process keeps
// running, as a network partition lasting longer than the TTL would: its
// lease ends now, and until Heal every store call it makes fails with
// sessionstore.ErrUnavailable, so it cannot register again or bind anything.
// The node learns it lost its documents and ends their streams; the other
// nodes see it leave and take its documents over on their next call.
// Partition returns the registration it ended.
func (c *Cluster) Partition(i int) sessionstore.Member {
	c.t.Helper()
	n := c.Node(i)
	n.client.cut.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	members, err := c.store.Members(ctx)
	if err != nil {
		c.t.Fatalf("partition node %d: list members: %v", i, err)
	}
	for _, m := range members {
		if m.Addr == n.addr {
			c.store.ExpireLease(m)
			return m
		}
	}
	c.t.Fatalf("partition node %d: %s is not a live member", i, n.addr)
	return sessionstore.Member{}
}

// Heal ends the partition of node i: its store calls work again, so it
// registers again (under a new incarnation) on its next attempt.
func (c *Cluster) Heal(i int) {
	c.Node(i).client.cut.Store(false)
}

// Owner is a document's owner as the session store records it.
type Owner struct {
	// Node is the owning node.
	Node *Node
	// Binding is the store's record: owner registration and epoch.
	Binding sessionstore.Binding
}

// OwnerOf returns the node that owns docKey according to the session store,
// or an error wrapping ErrNoOwner when the document has no live binding (it
// was never used, or its owner left and nobody has taken it over yet).
func (c *Cluster) OwnerOf(ctx context.Context, docKey string) (Owner, error) {
	b, ok, err := c.store.Resolve(ctx, docKey)
	if err != nil {
		return Owner{}, fmt.Errorf("owner of %q: %w", docKey, err)
	}
	if !ok {
		return Owner{}, fmt.Errorf("owner of %q: %w", docKey, ErrNoOwner)
	}
	for _, n := range c.Nodes() {
		if n.addr == b.Owner.Addr {
			return Owner{Node: n, Binding: b}, nil
		}
	}
	return Owner{}, fmt.Errorf("owner of %q: %s is no node of this cluster", docKey, b.Owner.Addr)
}

// WaitOwner waits until docKey has a live owner for which accept returns
// true (nil accepts any) and returns it, failing the test after WaitTimeout.
func (c *Cluster) WaitOwner(docKey string, accept func(Owner) bool) Owner {
	c.t.Helper()
	var o Owner
	poll.Until(c.t, WaitTimeout, fmt.Sprintf("document %q: an acceptable owner", docKey), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		var err error
		if o, err = c.OwnerOf(ctx, docKey); err != nil {
			return err
		}
		if accept != nil && !accept(o) {
			return fmt.Errorf("owner %+v not accepted", o.Binding)
		}
		return nil
	})
	return o
}

// WaitMembers waits until the store and every running node see exactly n
// live members, failing the test after WaitTimeout.
func (c *Cluster) WaitMembers(n int) {
	c.t.Helper()
	poll.Until(c.t, WaitTimeout, fmt.Sprintf("cluster settled on %d members", n), func() error {
		if got, err := c.settled(n); err != nil {
			return fmt.Errorf("%w (store: %v)", err, got)
		}
		return nil
	})
}

// settled reports whether the store and every running node agree on n
// members.
func (c *Cluster) settled(n int) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	members, err := c.store.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = m.Addr
	}
	slices.Sort(addrs)
	if len(addrs) != n {
		return addrs, fmt.Errorf("store has %d members", len(addrs))
	}
	for _, node := range c.Running() {
		if view := node.srv.Affinity().Members(); !slices.Equal(view, addrs) {
			return addrs, fmt.Errorf("node %d sees %v", node.index, view)
		}
	}
	return addrs, nil
}

// close stops every running node, then the store and the database.
func (c *Cluster) close() {
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		n.client.cut.Store(false) // a partitioned node may release what it holds
		wg.Go(func() {
			if err := n.stop(ctx); err != nil {
				c.t.Errorf("stop node %d: %v", n.index, err)
			}
		})
	}
	wg.Wait()
	if err := c.store.Close(); err != nil {
		c.t.Errorf("close session store: %v", err)
	}
	if err := c.db.Close(ctx); err != nil {
		c.t.Errorf("close database: %v", err)
	}
}

// Node is one server of a Cluster.
type Node struct {
	t      testing.TB
	index  int
	srv    *server.Server
	addr   string
	client *nodeStore

	mu      sync.Mutex
	state   nodeState
	clients map[servertest.Protocol]v1connect.YorkieServiceClient
}

type nodeState int

const (
	running nodeState = iota
	stopped
	aborted
)

// Index is the node's position in the order nodes were started.
func (n *Node) Index() int { return n.index }

// Server returns the node's server.
func (n *Node) Server() *server.Server { return n.srv }

// Affinity returns the node's affinity manager.
func (n *Node) Affinity() *affinity.Manager { return n.srv.Affinity() }

// Addr is the node's advertised host:port.
func (n *Node) Addr() string { return n.addr }

// SessionKey is the node's session key: base64 of Addr.
func (n *Node) SessionKey() string { return affinity.SessionKey(n.addr) }

// URL is the http:// base URL of the node's RPC port.
func (n *Node) URL() string { return servertest.BaseURL(n.srv) }

// Running reports whether the node has been neither stopped nor aborted.
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state == running
}

// Client returns a YorkieService client of the node speaking protocol p,
// the same one on every call without options. Options give a new client.
func (n *Node) Client(p servertest.Protocol, opts ...connect.ClientOption) v1connect.YorkieServiceClient {
	if len(opts) > 0 {
		return servertest.Client(n.t, n.srv, p, opts...)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.clients[p]
	if !ok {
		c = servertest.Client(n.t, n.srv, p)
		n.clients[p] = c
	}
	return c
}

// ConnectJSON returns the node's Connect JSON client, as the JS SDK speaks.
func (n *Node) ConnectJSON() v1connect.YorkieServiceClient { return n.Client(servertest.ConnectJSON) }

// ConnectProto returns the node's Connect binary protobuf client.
func (n *Node) ConnectProto() v1connect.YorkieServiceClient { return n.Client(servertest.ConnectProto) }

// stop shuts the node down gracefully unless it is already down.
func (n *Node) stop(ctx context.Context) error {
	n.mu.Lock()
	if n.state != running {
		n.mu.Unlock()
		return nil
	}
	n.state = stopped
	n.mu.Unlock()
	err := n.srv.Shutdown(ctx)
	if cerr := n.client.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close store client: %w", cerr)
	}
	return err
}

// abort crashes the node unless it is already down.
func (n *Node) abort() {
	n.mu.Lock()
	if n.state != running {
		n.mu.Unlock()
		return
	}
	n.state = aborted
	n.mu.Unlock()
	n.srv.Abort()
}

// errPartitioned is what a partitioned node's store calls fail with.
var errPartitioned = fmt.Errorf("clustertest: node cut off the session store: %w", sessionstore.ErrUnavailable)

// nodeStore is one node's client of the shared store, which Partition can
// cut off. A watch of the members opened before the cut keeps running.
type nodeStore struct {
	*memory.Client
	cut atomic.Bool

	mu   sync.Mutex
	hold *resolveHold
}

// resolveHold stops the next Resolve of key (see Node.HoldResolve).
type resolveHold struct {
	key      string
	arrived  chan struct{}
	released chan struct{}
}

// HoldResolve makes the node's next lookup of key in the session store
// wait until release is called (or its context ends); arrived is closed
// when that lookup begins. Later lookups of key, and those of other keys,
// pass. A test uses it to stop a node at a known step: say, the next
// owner of a channel group taking the sessions a draining node copies
// (it asks the store whether the group is its own).
func (n *Node) HoldResolve(key string) (arrived <-chan struct{}, release func()) {
	h := &resolveHold{key: key, arrived: make(chan struct{}), released: make(chan struct{})}
	n.client.mu.Lock()
	n.client.hold = h
	n.client.mu.Unlock()
	var once sync.Once
	return h.arrived, func() { once.Do(func() { close(h.released) }) }
}

// held takes the hold of key, if any.
func (s *nodeStore) held(key string) *resolveHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.hold
	if h == nil || h.key != key {
		return nil
	}
	s.hold = nil
	return h
}

func (s *nodeStore) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	if s.cut.Load() {
		return nil, errPartitioned
	}
	return s.Client.Register(ctx, addr, ttl)
}

func (s *nodeStore) Members(ctx context.Context) ([]sessionstore.Member, error) {
	if s.cut.Load() {
		return nil, errPartitioned
	}
	return s.Client.Members(ctx)
}

func (s *nodeStore) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	if s.cut.Load() {
		return nil, errPartitioned
	}
	return s.Client.WatchMembers(ctx)
}

func (s *nodeStore) Resolve(ctx context.Context, key string) (sessionstore.Binding, bool, error) {
	if s.cut.Load() {
		return sessionstore.Binding{}, false, errPartitioned
	}
	if h := s.held(key); h != nil {
		close(h.arrived)
		select {
		case <-h.released:
		case <-ctx.Done():
			return sessionstore.Binding{}, false, ctx.Err()
		}
	}
	return s.Client.Resolve(ctx, key)
}

func (s *nodeStore) Bind(ctx context.Context, key string, owner sessionstore.Member) (sessionstore.Binding, error) {
	if s.cut.Load() {
		return sessionstore.Binding{}, errPartitioned
	}
	return s.Client.Bind(ctx, key, owner)
}

func (s *nodeStore) Release(ctx context.Context, b sessionstore.Binding) error {
	if s.cut.Load() {
		return errPartitioned
	}
	return s.Client.Release(ctx, b)
}

func (s *nodeStore) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	if s.cut.Load() {
		return sessionstore.Member{}, errPartitioned
	}
	return s.Client.Claim(ctx, role, owner)
}

func (s *nodeStore) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	if s.cut.Load() {
		return errPartitioned
	}
	return s.Client.Resign(ctx, role, owner)
}

func (s *nodeStore) ClusterSecret(ctx context.Context) (string, error) {
	if s.cut.Load() {
		return "", errPartitioned
	}
	return s.Client.ClusterSecret(ctx)
}

var _ sessionstore.Store = (*nodeStore)(nil)
