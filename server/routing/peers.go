// Package routing sends each document call to the node that owns the
// document: it asks the affinity manager for the owner, serves the call here
// with the owner's epoch or relays it to the owner over the peer transport,
// and drops what this node serves once it loses a binding. The peer
// transport and the cluster secret, which tells node-to-node calls from a
// client's, live here too.
package routing

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
)

// Header names of node-to-node calls.
const (
	// HeaderSecret carries the cluster secret.
	HeaderSecret = "x-yorkie-cluster-secret"
	// HeaderForwardedBy marks a call a node forwarded to the owner, naming the
	// forwarding node. The owner serves it or refuses it; it never forwards it
	// again, so a stale view cannot make calls loop.
	HeaderForwardedBy = "x-yorkie-forwarded-by"
)

// Transport reaches the other nodes of the cluster. Peers is the real one;
// tests wrap it to cut links between nodes.
type Transport interface {
	// Yorkie returns a YorkieService client of the node at addr whose
	// calls are marked as forwarded by this node.
	Yorkie(addr string) v1connect.YorkieServiceClient
	// Cluster returns a ClusterService client of the node at addr.
	Cluster(addr string) clusterv1connect.ClusterServiceClient
	// Admin returns an AdminService client of the node at addr whose calls
	// are marked as forwarded by this node.
	Admin(addr string) v1connect.AdminServiceClient
}

// PeersConfig configures Peers.
type PeersConfig struct {
	// Secret is the cluster secret sent with every node-to-node call.
	Secret string
	// Self is this node's advertised address, sent in HeaderForwardedBy.
	Self string
	// DialTimeout bounds connecting to a peer; 2 s when zero.
	DialTimeout time.Duration
	// TLS, when set, calls peers over TLS verified with it (their RPC
	// ports serve TLS); nil calls them in cleartext.
	TLS *tls.Config
}

// Peers keeps connections to every peer it has called. Forwarded calls use
// binary protobuf, whatever protocol the client spoke (the receiving node has
// decoded the request already). Unary calls go as Connect over HTTP/1.1
// keep-alive, the path a node serves cheapest; streams go as gRPC over h2c,
// so many relayed Watch streams share a few connections.
type Peers struct {
	cfg     PeersConfig
	scheme  string // of the peers' URLs: http:// or https://
	unary   *http.Client
	streams *http.Client

	mu      sync.Mutex
	yorkie  map[string]v1connect.YorkieServiceClient
	cluster map[string]clusterv1connect.ClusterServiceClient
	admin   map[string]v1connect.AdminServiceClient
}

// peerClient sends a peer's unary calls and its streams each their own way.
type peerClient struct {
	v1connect.YorkieServiceClient                               // unary
	streams                       v1connect.YorkieServiceClient // Watch, WatchDocument
}

func (p peerClient) Watch(ctx context.Context, req *connect.Request[api.WatchRequest]) (*connect.ServerStreamForClient[api.WatchResponse], error) {
	return p.streams.Watch(ctx, req)
}

func (p peerClient) WatchDocument(ctx context.Context, req *connect.Request[api.WatchDocumentRequest]) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
	return p.streams.WatchDocument(ctx, req)
}

// NewPeers returns an empty set of peer clients.
func NewPeers(cfg PeersConfig) *Peers {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 2 * time.Second
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	scheme := "http://"
	if cfg.TLS != nil {
		tlsConfig, scheme = cfg.TLS.Clone(), "https://"
	}
	transport := func(protocols *http.Protocols, idle int) *http.Transport {
		return &http.Transport{
			Protocols:           protocols,
			DialContext:         dialer.DialContext,
			TLSClientConfig:     tlsConfig.Clone(),
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	// Over TLS the same split: unary calls on HTTP/1.1, streams on HTTP/2
	// (by ALPN instead of prior knowledge).
	http1, h2 := new(http.Protocols), new(http.Protocols)
	http1.SetHTTP1(true)
	if cfg.TLS != nil {
		h2.SetHTTP2(true)
	} else {
		h2.SetUnencryptedHTTP2(true)
	}
	return &Peers{
		cfg:     cfg,
		scheme:  scheme,
		unary:   &http.Client{Transport: transport(http1, 64)},
		streams: &http.Client{Transport: transport(h2, 4)},
		yorkie:  map[string]v1connect.YorkieServiceClient{},
		cluster: map[string]clusterv1connect.ClusterServiceClient{},
		admin:   map[string]v1connect.AdminServiceClient{},
	}
}

// Yorkie returns a YorkieService client of the peer at addr whose calls are
// marked as forwarded by this node. Callers must have checked that addr is a
// live member: an address from a request is never dialled.
func (p *Peers) Yorkie(addr string) v1connect.YorkieServiceClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.yorkie[addr]
	if !ok {
		sign := connect.WithInterceptors(p.sign(true))
		c = peerClient{
			YorkieServiceClient: v1connect.NewYorkieServiceClient(p.unary, p.scheme+addr, sign),
			streams:             v1connect.NewYorkieServiceClient(p.streams, p.scheme+addr, connect.WithGRPC(), sign),
		}
		p.yorkie[addr] = c
	}
	return c
}

// Cluster returns a ClusterService client of the peer at addr.
func (p *Peers) Cluster(addr string) clusterv1connect.ClusterServiceClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.cluster[addr]
	if !ok {
		c = clusterv1connect.NewClusterServiceClient(p.unary, p.scheme+addr,
			connect.WithInterceptors(p.sign(false)))
		p.cluster[addr] = c
	}
	return c
}

// Admin returns an AdminService client of the peer at addr whose calls are
// marked as forwarded by this node, for the admin calls its owner serves.
func (p *Peers) Admin(addr string) v1connect.AdminServiceClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.admin[addr]
	if !ok {
		c = v1connect.NewAdminServiceClient(p.unary, "http://"+addr, connect.WithInterceptors(p.sign(true)))
		p.admin[addr] = c
	}
	return c
}

// Close closes idle connections to peers.
func (p *Peers) Close() {
	p.unary.CloseIdleConnections()
	p.streams.CloseIdleConnections()
}

// sign adds the secret (and the forwarding mark) to outgoing calls.
func (p *Peers) sign(forwarded bool) connect.Interceptor {
	set := func(h http.Header) {
		h.Set(HeaderSecret, p.cfg.Secret)
		if forwarded {
			h.Set(HeaderForwardedBy, p.cfg.Self)
		}
	}
	return interceptor{
		unary: func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				set(req.Header())
				return next(ctx, req)
			}
		},
		client: func(next connect.StreamingClientFunc) connect.StreamingClientFunc {
			return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
				conn := next(ctx, spec)
				set(conn.RequestHeader())
				return conn
			}
		},
	}
}

// Authentic reports whether h carries the cluster secret. An empty
// configured secret accepts nothing, so a node without a secret cannot be
// made to serve internal calls.
func Authentic(h http.Header, secret string) bool {
	got := h.Get(HeaderSecret)
	return secret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
}

// interceptor is a connect.Interceptor built from the hooks it needs.
type interceptor struct {
	unary  func(connect.UnaryFunc) connect.UnaryFunc
	client func(connect.StreamingClientFunc) connect.StreamingClientFunc
}

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return i.unary(next) }

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return i.client(next)
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
