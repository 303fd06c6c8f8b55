package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/cluster"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/rpc"
)

// AffinityMode says what a node does with a call for a document it does not own.
type AffinityMode string

// Affinity modes.
const (
	// Forward relays the call to the owner: unmodified clients work behind
	// any load balancer.
	Forward AffinityMode = "forward"
	// Redirect refuses the call with ErrWrongNode naming the owner, for
	// clients or proxies that route by the session key.
	Redirect AffinityMode = "redirect"
)

// DefaultSessionKeyHeader carries the owner's session key, as Envoy's
// header-based stateful session expects it.
const DefaultSessionKeyHeader = "x-session-key"

var (
	// errNotOwner: the node was asked to write a document it does not own.
	// It wraps database.ErrFenced, so clients get a retryable error.
	errNotOwner = fmt.Errorf("this node does not own the document: %w", database.ErrFenced)
	// errBindingLost is why the streams of a document whose binding this
	// node lost end.
	errBindingLost = errors.New("this node lost the document's binding")
)

// router routes document calls to their owners with the affinity manager.
// Its manager, peers and secret are set by Start, before the first call.
type router struct {
	mode     AffinityMode
	header   string
	logger   *slog.Logger
	backend  *backend.Backend
	channels *channel.Manager

	mgr    *affinity.Manager
	peers  *cluster.Peers
	secret string

	forwards  prometheus.Counter
	redirects prometheus.Counter
}

func newRouter(mode AffinityMode, header string, logger *slog.Logger, reg prometheus.Registerer) (*router, error) {
	r := &router{
		mode:   mode,
		header: header,
		logger: logger,
		forwards: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_forwards_total",
			Help: "Document calls relayed to the owner node.",
		}),
		redirects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yorkie_affinity_redirects_total",
			Help: "Document calls refused with ErrWrongNode naming the owner.",
		}),
	}
	if err := errors.Join(reg.Register(r.forwards), reg.Register(r.redirects)); err != nil {
		return nil, fmt.Errorf("register routing metrics: %w", err)
	}
	return r, nil
}

// Route implements rpc.Router. The owner comes from the binding, never from
// the session key a request carries: that is a hint a client could forge,
// so this node dials only members it knows.
func (r *router) Route(ctx context.Context, call rpc.DocumentCall) (rpc.Route, error) {
	forwarded := call.Header.Get(cluster.HeaderForwardedBy) != ""
	if forwarded && !r.authentic(call.Header) {
		return rpc.Route{}, rpc.PermissionDenied(errors.New("forwarded call without the cluster secret"))
	}
	owner, err := r.mgr.Owner(ctx, bindingKey(ctx, call.DocumentKey))
	if err != nil {
		return rpc.Route{}, fmt.Errorf("find owner: %w", err)
	}
	rt := rpc.Route{SessionKey: owner.SessionKey}
	if owner.Self {
		return rt, nil
	}
	// A forwarded call is never forwarded again: two nodes with different
	// views of the owner must not pass a call back and forth. An attach is
	// handed to the owner even in redirect mode: it must succeed wherever it
	// lands, and its answer tells the client the owner's session key.
	if forwarded || (r.mode == Redirect && !call.Kind.IsAttach()) {
		r.redirects.Inc()
		return rpc.Route{}, rpc.WrongNode(r.header, owner.SessionKey,
			fmt.Errorf("document %q is owned by another node", call.DocumentKey))
	}
	r.forwards.Inc()
	rt.Owner = r.peers.Yorkie(owner.Addr)
	rt.OwnerGone = r.mgr.Gone(owner.Addr)
	return rt, nil
}

// RelayFailed implements rpc.Router: an owner that could not be reached or
// no longer owns the document is forgotten, so the next call asks the store.
func (r *router) RelayFailed(ctx context.Context, call rpc.DocumentCall, err error) {
	if code := connect.CodeOf(err); code == connect.CodeUnavailable || code == connect.CodeUnknown {
		r.mgr.Forget(bindingKey(ctx, call.DocumentKey))
	}
}

// DetachRemote implements rpc.Router.
func (r *router) DetachRemote(ctx context.Context, clientID string) error {
	docIDs, err := r.backend.AttachedDocuments(ctx, clientID)
	if err != nil {
		return err
	}
	var errs []error
	for _, docID := range docIDs {
		key, err := r.backend.DocumentKey(ctx, docID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		owner, err := r.mgr.Owner(ctx, bindingKey(ctx, key))
		if err != nil {
			errs = append(errs, fmt.Errorf("find owner of %q: %w", key, err))
			continue
		}
		if owner.Self {
			continue // DeactivateClient detaches it here
		}
		_, err = r.peers.Cluster(owner.Addr).DetachClientDocument(ctx, connect.NewRequest(&clusterv1.DetachClientDocumentRequest{
			ClientId: clientID, DocumentId: docID, DocumentKey: key, ProjectId: project.ID(ctx),
		}))
		if err != nil {
			r.mgr.Forget(bindingKey(ctx, key))
			errs = append(errs, fmt.Errorf("detach %s from %q at %s: %w: %w", clientID, key, owner.Addr, database.ErrUnavailable, err))
		}
	}
	return errors.Join(errs...)
}

// SessionKeyHeader implements rpc.Router.
func (r *router) SessionKeyHeader() string { return r.header }

// authentic reports whether h carries the cluster secret.
func (r *router) authentic(h http.Header) bool { return cluster.Authentic(h, r.secret) }

// epoch gives the backend the fencing token of a document this node owns.
func (r *router) epoch(ctx context.Context, docID string) (int64, error) {
	key, err := r.backend.DocumentKey(ctx, docID)
	if err != nil {
		return 0, err
	}
	owner, err := r.mgr.Owner(ctx, bindingKey(ctx, key))
	if err != nil {
		return 0, fmt.Errorf("find owner of %q: %w", key, err)
	}
	if !owner.Self {
		return 0, fmt.Errorf("document %q: %w", key, errNotOwner)
	}
	return owner.Epoch, nil
}

// lost drops the documents whose bindings this node lost: their streams end
// with a retryable error and the clients reconnect to the new owner.
func (r *router) lost(bindings []string) {
	ctx := context.Background()
	for _, b := range bindings {
		pid, key := project.SplitScopedKey(b)
		if first, ok := channel.FromRoutingKey(key); ok {
			r.channels.Release(project.ScopedKey(pid, first), errBindingLost)
			continue
		}
		if err := r.backend.ReleaseName(ctx, backend.DocName{Project: pid, Key: key}, errBindingLost); err != nil {
			r.logger.Warn("release lost document", "binding", b, "error", err)
		}
	}
}

// bindingKey is the key a document (or channel group) of the call's
// project is bound under in the session store.
func bindingKey(ctx context.Context, key string) string {
	return project.ScopedKey(project.ID(ctx), key)
}
