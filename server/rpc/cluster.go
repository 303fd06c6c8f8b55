package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	upmetrics "github.com/yorkie-affinity/yorkie/server/metrics"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
)

// ClusterConfig configures a ClusterService.
type ClusterConfig struct {
	// Backend holds the document logic. Required.
	Backend *backend.Backend
	// Router tells whether this node owns a document. Required.
	Router Router
	// Authentic reports whether a request carries the cluster secret. Required.
	Authentic func(http.Header) bool
	// Logger receives failures; nil discards.
	Logger *slog.Logger
	// Service is the node's YorkieService, which serves the owner's side
	// of the AdminService's calls. Required.
	Service *Service
	// FindProject returns a project by ID, the one a call names. Required.
	FindProject func(ctx context.Context, id string) (*database.ProjectInfo, error)
	// Upstream records upstream Yorkie's RPC series; nil records none.
	Upstream *upmetrics.Metrics
	// Drain drains this node and returns the documents it still owns
	// (nil: Drain answers unimplemented).
	Drain func(ctx context.Context) (left int, err error)
}

// ClusterService serves the calls nodes make to each other. Every call must
// carry the cluster secret: the service shares the public port, so a client
// could otherwise detach other clients.
type ClusterService struct {
	cfg ClusterConfig
}

// NewCluster returns the node-to-node service.
func NewCluster(cfg ClusterConfig) (*ClusterService, error) {
	if cfg.Backend == nil || cfg.Router == nil || cfg.Authentic == nil || cfg.FindProject == nil || cfg.Service == nil {
		return nil, errors.New("rpc: ClusterConfig needs Backend, Router, Authentic, FindProject and Service")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &ClusterService{cfg: cfg}, nil
}

// clusterRequestBytes bounds a node-to-node call: the largest carries a
// whole AdminService request (at most bounds.DefaultSmallRequestBytes)
// relayed to the document's owner, inside an envelope of its own.
const clusterRequestBytes = 2 * bounds.DefaultSmallRequestBytes

// Bound is the service's rule for bounds.New: node-to-node messages are
// small, and a call without the cluster secret is refused before a byte of
// its body is read.
func (c *ClusterService) Bound() bounds.Rule {
	return bounds.Rule{
		Prefix:   "/" + clusterv1connect.ClusterServiceName + "/",
		MaxBytes: clusterRequestBytes,
		Admit:    c.admit,
	}
}

// admit refuses a call without the cluster secret.
func (c *ClusterService) admit(h http.Header) *connect.Error {
	if !c.cfg.Authentic(h) {
		return PermissionDenied(errors.New("node-to-node call without the cluster secret"))
	}
	return nil
}

// Handler returns the path prefix and handler of the service. It checks the
// secret again, so that the handler mounted without bounds.New still
// serves no one else.
func (c *ClusterService) Handler() (string, http.Handler) {
	return clusterv1connect.NewClusterServiceHandler(c,
		connect.WithReadMaxBytes(clusterRequestBytes),
		connect.WithInterceptors(&failureLogger{logger: c.cfg.Logger}, c.cfg.Upstream.Interceptor(false), connect.UnaryInterceptorFunc(
			func(next connect.UnaryFunc) connect.UnaryFunc {
				return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
					if err := c.admit(req.Header()); err != nil {
						return nil, err
					}
					return next(ctx, req)
				}
			})))
}

// DetachClientDocument detaches a deactivating client from a document this
// node owns. A node that does not own it refuses with ErrWrongNode rather
// than pass the call on: the caller asks the owner it knows of.
func (c *ClusterService) DetachClientDocument(ctx context.Context, req *connect.Request[clusterv1.DetachClientDocumentRequest]) (*connect.Response[clusterv1.DetachClientDocumentResponse], error) {
	clientID, docID, key := req.Msg.GetClientId(), req.Msg.GetDocumentId(), req.Msg.GetDocumentKey()
	if err := validateClientID(clientID); err != nil {
		return nil, invalidArgument(err)
	}
	if err := validateDocumentID(docID); err != nil {
		return nil, invalidArgument(err)
	}
	if err := validateDocumentKey(key); err != nil {
		return nil, invalidArgument(err)
	}
	// The detaching node names the client's project; none is no call of
	// ours, never the default project.
	pid := req.Msg.GetProjectId()
	if pid == "" {
		return nil, invalidArgument(fmt.Errorf("project_id: %w", project.ErrMissing))
	}
	p, err := c.cfg.FindProject(ctx, pid)
	if err != nil {
		return nil, toConnectError(err)
	}
	rt, err := c.cfg.Router.Route(ctx, routing.DocumentCall{Kind: routing.CallDetach, Project: p, ClientID: clientID, DocumentID: docID, DocumentKey: key, Header: req.Header()})
	if err != nil {
		return nil, toConnectError(routeError(err))
	}
	if rt.Owner != nil {
		return nil, WrongNode(c.cfg.Router.SessionKeyHeader(), rt.SessionKey, fmt.Errorf("document %q is owned elsewhere", key))
	}
	if err := c.cfg.Backend.DetachClient(ctx, rt.Project, rt.Epoch, clientID, docID); err != nil {
		return nil, toConnectError(err)
	}
	return connect.NewResponse(&clusterv1.DetachClientDocumentResponse{}), nil
}

var _ clusterv1connect.ClusterServiceHandler = (*ClusterService)(nil)
