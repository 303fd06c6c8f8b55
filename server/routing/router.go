package routing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/project"
)

// Mode says what a node does with a call for a document it does not own.
type Mode string

// Affinity modes.
const (
	// Forward relays the call to the owner: unmodified clients work behind
	// any load balancer.
	Forward Mode = "forward"
	// Redirect refuses the call with a WrongNodeError naming the owner, for
	// clients or proxies that route by the session key.
	Redirect Mode = "redirect"
)

// DefaultSessionKeyHeader carries the owner's session key, as Envoy's
// header-based stateful session expects it.
const DefaultSessionKeyHeader = "x-session-key"

// DefaultLostReleaseTimeout bounds the release of the documents one loss of
// bindings hands back. It runs on the affinity manager's goroutine, which
// must go on to renew the lease and follow the membership.
const DefaultLostReleaseTimeout = 5 * time.Second

var (
	// ErrForgedForward: a call marked as forwarded by a node lacks the
	// cluster secret. The RPC layer refuses it with permission denied.
	ErrForgedForward = errors.New("forwarded call without the cluster secret")
	// ErrOwnerUnreachable: the node that owns a document did not answer a
	// node-to-node call. Retryable: the owner is forgotten, so the client's
	// next try finds the owner afresh.
	ErrOwnerUnreachable = fault.NewRetryable("document owner unreachable")
	// errBindingLost is why the streams of a document whose binding this
	// node lost end.
	errBindingLost = errors.New("this node lost the document's binding")
)

// WrongNodeError refuses a call another node must serve, naming its owner.
// The RPC layer turns it into unavailable with the owner's session key.
type WrongNodeError struct {
	// Header names the response header that carries SessionKey.
	Header string
	// SessionKey names the owner.
	SessionKey string
	// Err says why.
	Err error
}

func (e *WrongNodeError) Error() string { return e.Err.Error() }

func (e *WrongNodeError) Unwrap() error { return e.Err }

// Backend is what routing needs of the document logic: the documents a
// client of project p has attached, their keys (in p), and dropping the
// state of documents this node no longer owns.
type Backend interface {
	AttachedDocuments(ctx context.Context, p *database.ProjectInfo, clientID string) ([]string, error)
	DocumentKey(ctx context.Context, p *database.ProjectInfo, docID string) (string, error)
	ReleaseKey(ctx context.Context, projectID, key string, cause error) error
}

// Channels is what routing needs of the channel manager: dropping the
// sessions of a channel group this node no longer owns.
type Channels interface {
	Release(first string, cause error)
}

// Config configures a Router. Every field is required.
type Config struct {
	// Owners is the node's ownership manager, joined to the cluster.
	Owners *affinity.Manager
	// Peers reaches the other nodes.
	Peers Transport
	// Backend holds the documents served here.
	Backend Backend
	// Channels holds the channel sessions served here.
	Channels Channels
	// Mode is Forward or Redirect.
	Mode Mode
	// Header names the response header carrying the owner's session key.
	Header string
	// Secret is the cluster secret forwarded calls carry.
	Secret string
	// Logger receives what routing cannot return.
	Logger *slog.Logger
	// Registerer receives the routing metrics.
	Registerer prometheus.Registerer
}

// Router routes document calls to their owners with the affinity manager.
type Router struct {
	cfg       Config
	forwards  prometheus.Counter
	redirects prometheus.Counter
}

// New returns a router ready to route.
func New(cfg Config) (*Router, error) {
	if cfg.Owners == nil || cfg.Peers == nil || cfg.Backend == nil || cfg.Channels == nil ||
		cfg.Logger == nil || cfg.Registerer == nil {
		return nil, errors.New("routing: Config needs Owners, Peers, Backend, Channels, Logger and Registerer")
	}
	if cfg.Mode != Forward && cfg.Mode != Redirect {
		return nil, fmt.Errorf("routing: affinity mode %q: want %q or %q", cfg.Mode, Forward, Redirect)
	}
	if cfg.Header == "" || cfg.Secret == "" {
		return nil, errors.New("routing: Config needs Header and Secret")
	}
	r := &Router{
		cfg: cfg,
		forwards: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_forwards_total",
			Help: "Document calls relayed to the owner node.",
		}),
		redirects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_redirects_total",
			Help: "Document calls refused with ErrWrongNode naming the owner.",
		}),
	}
	if err := errors.Join(cfg.Registerer.Register(r.forwards), cfg.Registerer.Register(r.redirects)); err != nil {
		return nil, fmt.Errorf("register routing metrics: %w", err)
	}
	return r, nil
}

// Route returns where call is served. The owner comes from the binding,
// never from the session key a request carries: that is a hint a client
// could forge, so this node dials only members it knows.
func (r *Router) Route(ctx context.Context, call DocumentCall) (Route, error) {
	forwarded := call.Header.Get(HeaderForwardedBy) != ""
	if forwarded && !r.Authentic(call.Header) {
		return Route{}, ErrForgedForward
	}
	if call.Project == nil || call.Project.ID == "" {
		return Route{}, fmt.Errorf("route: %w", project.ErrMissing)
	}
	binding := project.ScopedKey(call.Project.ID, call.DocumentKey)
	owner, err := r.cfg.Owners.Owner(ctx, binding)
	if err != nil {
		return Route{}, fmt.Errorf("find owner: %w", err)
	}
	if forwarded && !owner.Self {
		// The sender holds this node for the owner: a binding handed to this
		// node by a draining owner leaves that owner in this node's cache
		// while it lives. Ask the store once.
		r.cfg.Owners.Forget(binding)
		if owner, err = r.cfg.Owners.Owner(ctx, binding); err != nil {
			return Route{}, fmt.Errorf("find owner: %w", err)
		}
	}
	rt := Route{Project: call.Project, Binding: binding, SessionKey: owner.SessionKey}
	if owner.Self {
		rt.Epoch = owner.Epoch
		if call.Kind == CallAttachChannel || call.Kind == CallChannel || call.Kind == CallWatchChannel {
			owners, epoch := r.cfg.Owners, owner.Epoch
			rt.Held = func() bool { return owners.Holds(binding, epoch) }
		}
		return rt, nil
	}
	// A forwarded call is never forwarded again: two nodes with different
	// views of the owner must not pass a call back and forth. An attach is
	// handed to the owner even in redirect mode: it must succeed wherever it
	// lands, and its answer tells the client the owner's session key.
	if forwarded || (r.cfg.Mode == Redirect && !call.Kind.handedOn() && r.refuses(call)) {
		r.redirects.Inc()
		return Route{}, &WrongNodeError{Header: r.cfg.Header, SessionKey: owner.SessionKey,
			Err: fmt.Errorf("document %q is owned by another node", call.DocumentKey)}
	}
	r.forwards.Inc()
	rt.Owner = r.cfg.Peers.Yorkie(owner.Addr)
	rt.Addr = owner.Addr
	rt.OwnerGone = r.cfg.Owners.Gone(owner.Addr)
	return rt, nil
}

// refuses reports whether a redirect-mode node refuses a call for a
// document another node owns, naming the owner, rather than relay it. It
// refuses only a call that carries no session key: that is how a client
// learns its first key. A call that carries one came here by a key that has
// gone stale (its owner handed the document on, is draining, or is down and
// the proxy fell back to hashing), and a draining node answers every call:
// such calls are relayed, and the answer's key moves the client, so a
// rolling restart or a failover tells no client where to go with an error.
// The key is never dialled: the call goes to the binding's owner.
func (r *Router) refuses(call DocumentCall) bool {
	return call.Header.Get(r.cfg.Header) == "" && !r.cfg.Owners.Draining()
}

// RelayFailed forgets the owner of rt, which could not be reached or no
// longer owns the document, so the next call asks the store. An owner whose
// port refused the connection is suspected of being gone (see
// affinity.Manager.Suspect): once it is evicted, the call routed again binds
// the document to a live member instead of waiting for the lease to run out.
func (r *Router) RelayFailed(ctx context.Context, rt Route, err error) {
	if code := connect.CodeOf(err); code == connect.CodeUnavailable || code == connect.CodeUnknown {
		if rt.Addr != "" && errors.Is(err, syscall.ECONNREFUSED) {
			r.cfg.Owners.Suspect(ctx, rt.Addr)
		}
		r.cfg.Owners.Forget(rt.Binding)
	}
}

// DetachRemote detaches the client of project p from the documents other
// nodes own, at their owners, and returns the owner epochs of the documents
// it has attached here, for the backend to detach it from them.
func (r *Router) DetachRemote(ctx context.Context, p *database.ProjectInfo, clientID string) (map[string]int64, error) {
	if p == nil || p.ID == "" {
		return nil, fmt.Errorf("detach client %s: %w", clientID, project.ErrMissing)
	}
	pid := p.ID
	docIDs, err := r.cfg.Backend.AttachedDocuments(ctx, p, clientID)
	if err != nil {
		return nil, err
	}
	local := make(map[string]int64, len(docIDs))
	var errs []error
	for _, docID := range docIDs {
		key, err := r.cfg.Backend.DocumentKey(ctx, p, docID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		owner, err := r.cfg.Owners.Owner(ctx, project.ScopedKey(pid, key))
		if err != nil {
			errs = append(errs, fmt.Errorf("find owner of %q: %w", key, err))
			continue
		}
		if owner.Self {
			local[docID] = owner.Epoch
			continue // DeactivateClient detaches it here
		}
		_, err = r.cfg.Peers.Cluster(owner.Addr).DetachClientDocument(ctx, connect.NewRequest(&clusterv1.DetachClientDocumentRequest{
			ClientId: clientID, DocumentId: docID, DocumentKey: key, ProjectId: pid,
		}))
		if err != nil {
			r.cfg.Owners.Forget(project.ScopedKey(pid, key))
			errs = append(errs, fmt.Errorf("detach from %q at %s: %w: %w", key, owner.Addr, ErrOwnerUnreachable, err))
		}
	}
	return local, errors.Join(errs...)
}

// SessionKeyHeader names the response header carrying the owner's key.
func (r *Router) SessionKeyHeader() string { return r.cfg.Header }

// Authentic reports whether h carries the cluster secret.
func (r *Router) Authentic(h http.Header) bool { return Authentic(h, r.cfg.Secret) }

// Lost drops the documents whose bindings this node lost: their streams end
// with a retryable error and the clients reconnect to the new owner. It is
// the affinity manager's OnLost hook and runs on the manager's goroutine, so
// it waits for busy documents only up to timeout
// (DefaultLostReleaseTimeout when zero): a document a
// stuck call holds keeps its state, which the database fences, rather than
// stall lease and membership handling.
func Lost(backend Backend, channels Channels, timeout time.Duration, logger *slog.Logger) func(keys []string) {
	if timeout <= 0 {
		timeout = DefaultLostReleaseTimeout
	}
	return func(bindings []string) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		for _, b := range bindings {
			pid, key := project.SplitScopedKey(b)
			if first, ok := channel.FromRoutingKey(key); ok {
				channels.Release(project.ScopedKey(pid, first), errBindingLost)
				continue
			}
			if err := backend.ReleaseKey(ctx, pid, key, errBindingLost); err != nil {
				logger.Warn("release lost document", "binding", b, "error", err)
			}
		}
	}
}
