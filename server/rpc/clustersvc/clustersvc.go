// Package clustersvc serves the ClusterService, the calls nodes make to each other.
//
// They detach a deactivating client at a document's owner, serve the
// owner's side of the AdminService's document and channel calls, and drain
// a node (its successor's side included).
package clustersvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1/clusterv1connect"
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	upmetrics "github.com/yorkie-affinity/yorkie/server/metrics"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/interceptor"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
)

// Router tells whether this node owns a document (routing.Router is one).
type Router interface {
	// Route returns where call is served; a route without an Owner is
	// served here, under its Epoch.
	Route(ctx context.Context, call routing.DocumentCall) (routing.Route, error)
	// SessionKeyHeader names the response header carrying the owner's key.
	SessionKeyHeader() string
}

// Owner serves, on the node that owns a document or channel group, the
// AdminService's calls another node passed on, in the project the call
// names. Its errors are Connect errors with upstream's codes. The
// node's owner side of the admin calls (adminowner.Owners) is one.
type Owner interface {
	// SummaryHere returns the owner's state of a document held here
	// under epoch: root and size when root, presences when presences.
	SummaryHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, root, presences bool) (*admin.OwnerState, error)
	// UpdateHere applies an admin's update to a document held here and
	// returns its summary afterwards.
	UpdateHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, u backend.DocumentUpdate) (*api.DocumentSummary, error)
	// RemoveHere removes a document held here; unless force, one with
	// clients attached is refused.
	RemoveHere(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, force bool) error
	// ChannelCountsHere counts the sessions of channels whose group is
	// held here, with their sub-channels' when includeSub.
	ChannelCountsHere(projectID string, keys []string, includeSub bool) []*api.ChannelSummary
	// ChannelsHere lists, in key order, up to limit of the project's
	// channels held here whose keys start with query.
	ChannelsHere(projectID, query string, limit int) []*api.ChannelSummary
	// BroadcastHere hands an admin's message to the watchers of a
	// channel whose group is held here.
	BroadcastHere(ctx context.Context, projectID, key, topic string, payload []byte) error
}

// Config configures a Service.
type Config struct {
	// Backend holds the document logic. Required.
	Backend *backend.Backend
	// Router tells whether this node owns a document. Required.
	Router Router
	// Authentic reports whether a request carries the cluster secret. Required.
	Authentic func(http.Header) bool
	// Logger receives failures; nil discards.
	Logger *slog.Logger
	// Owner serves the owner's side of the AdminService's calls. Required.
	Owner Owner
	// FindProject returns a project by ID, the one a call names. Required.
	FindProject func(ctx context.Context, id string) (*database.ProjectInfo, error)
	// Upstream records upstream Yorkie's RPC series; nil records none.
	Upstream *upmetrics.Metrics
	// Drain drains this node and returns the documents it still owns
	// (nil: Drain answers unimplemented).
	Drain func(ctx context.Context) (left int, err error)
	// Channels holds this node's channel sessions, which take those a
	// draining node hands on (nil: ImportChannelSessions answers
	// unimplemented).
	Channels *channel.Manager
	// Reach tries a connection from this node to the member at addr, for a
	// node that found it unreachable (nil: Reach answers unimplemented);
	// an address that is not a member is not reached.
	Reach func(ctx context.Context, addr string) (bool, error)
}

// Service serves the calls nodes make to each other. Every call must
// carry the cluster secret: the service shares the public port, so a client
// could otherwise detach other clients.
type Service struct {
	cfg Config
}

// New returns the node-to-node service.
func New(cfg Config) (*Service, error) {
	if cfg.Backend == nil || cfg.Router == nil || cfg.Authentic == nil || cfg.FindProject == nil || cfg.Owner == nil {
		return nil, errors.New("clustersvc: Config needs Backend, Router, Authentic, FindProject and Owner")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}, nil
}

// clusterRequestBytes bounds a node-to-node call: the largest carries a
// whole AdminService request (at most bounds.DefaultSmallRequestBytes)
// relayed to the document's owner, inside an envelope of its own.
const clusterRequestBytes = 2 * bounds.DefaultSmallRequestBytes

// Bound is the service's rule for bounds.New: node-to-node messages are
// small, and a call without the cluster secret is refused before a byte of
// its body is read.
func (c *Service) Bound() bounds.Rule {
	return bounds.Rule{
		Prefix:   "/" + clusterv1connect.ClusterServiceName + "/",
		MaxBytes: clusterRequestBytes,
		Admit:    c.admit,
	}
}

// admit refuses a call without the cluster secret.
func (c *Service) admit(h http.Header) *connect.Error {
	if !c.cfg.Authentic(h) {
		return errinfo.PermissionDenied(errors.New("node-to-node call without the cluster secret"))
	}
	return nil
}

// Handler returns the path prefix and handler of the service. It checks the
// secret again, so that the handler mounted without bounds.New still
// serves no one else.
func (c *Service) Handler() (string, http.Handler) {
	return clusterv1connect.NewClusterServiceHandler(c,
		connect.WithReadMaxBytes(clusterRequestBytes),
		connect.WithInterceptors(interceptor.NewFailureLogger(c.cfg.Logger), c.cfg.Upstream.Interceptor(false), connect.UnaryInterceptorFunc(
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
func (c *Service) DetachClientDocument(ctx context.Context, req *connect.Request[clusterv1.DetachClientDocumentRequest]) (*connect.Response[clusterv1.DetachClientDocumentResponse], error) {
	clientID, docID, key := req.Msg.GetClientId(), req.Msg.GetDocumentId(), req.Msg.GetDocumentKey()
	if err := validate.ClientID(clientID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	if err := validate.DocumentID(docID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	if err := validate.DocumentKey(key); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	// The detaching node names the client's project; none is no call of
	// ours, never the default project.
	pid := req.Msg.GetProjectId()
	if pid == "" {
		return nil, errinfo.InvalidArgument(fmt.Errorf("project_id: %w", project.ErrMissing))
	}
	p, err := c.cfg.FindProject(ctx, pid)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	rt, err := c.cfg.Router.Route(ctx, routing.DocumentCall{Kind: routing.CallDetach, Project: p, ClientID: clientID, DocumentID: docID, DocumentKey: key, Header: req.Header()})
	if err != nil {
		return nil, errinfo.ToConnect(errinfo.RouteError(err))
	}
	if rt.Owner != nil {
		return nil, errinfo.WrongNode(c.cfg.Router.SessionKeyHeader(), rt.SessionKey, fmt.Errorf("document %q is owned elsewhere", key))
	}
	if err := c.cfg.Backend.DetachClient(ctx, rt.Project, rt.Epoch, clientID, docID); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&clusterv1.DetachClientDocumentResponse{}), nil
}

var _ clusterv1connect.ClusterServiceHandler = (*Service)(nil)
