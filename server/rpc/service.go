// Package rpc serves Yorkie's YorkieService over Connect, gRPC and gRPC-web.
// It decodes and validates requests, passes every document call through one
// routing step, calls the backend, and maps its errors to Connect errors that
// carry a google.rpc.ErrorInfo with the Yorkie error code name.
package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/fault"
	upmetrics "github.com/yorkie-affinity/yorkie/server/metrics"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/rpc/interceptor"
	"github.com/yorkie-affinity/yorkie/server/rpc/limits"
	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
	"github.com/yorkie-affinity/yorkie/server/rpc/validate"
)

// DefaultMaxRequestBytes bounds a request message when
// Config.MaxRequestBytes is 0. It admits the largest pack a document within
// upstream's 10 MiB document limit can need: the SDK counts a string's size
// as two bytes per UTF-16 unit, so such a document holds up to 5 Mi units,
// and Connect JSON spells a unit in at most 6 bytes (a \u escape), 30 MiB,
// plus the pack's framing.
const DefaultMaxRequestBytes = 32 << 20

// compressMinBytes is the smallest response the server compresses (when the
// client accepts it).
const compressMinBytes = 4 << 10

// Config configures a Service.
type Config struct {
	// Backend holds the document logic. Required.
	Backend *backend.Backend
	// Logger receives failures; nil discards.
	Logger *slog.Logger
	// Registerer receives the RPC metrics; nil skips them. Use a per-server
	// registry, never the global one, so servers in one process stay apart.
	Registerer prometheus.Registerer
	// MaxRequestBytes bounds a request body (0: DefaultMaxRequestBytes).
	MaxRequestBytes int
	// Router is the routing step of document calls; nil serves everything here.
	Router Router
	// Limits bound what one client may hold (zero fields: the defaults).
	Limits limits.Limits
	// Activity is told about every call of a client; nil records nothing.
	Activity interceptor.Activity
	// Channels holds the channel sessions this node serves. Required.
	Channels *channel.Manager
	// Codecs replace connect's codecs of the same names (package jsoncodec
	// for JSON, say); nil keeps connect's own: protojson and protobuf.
	Codecs []connect.Codec
	// Projects resolves the project of every call from its API key; nil
	// serves every call in the default project (tests of other layers).
	Projects *project.Resolver
	// Auth asks the projects' auth webhooks about calls; nil asks none.
	Auth *Auth
	// Upstream records upstream Yorkie's series; nil records none.
	Upstream *upmetrics.Metrics
}

// Service implements v1connect.YorkieServiceHandler.
type Service struct {
	backend         *backend.Backend
	logger          *slog.Logger
	router          Router
	maxRequestBytes int
	metrics         *interceptor.Metrics
	limits          limits.Limits
	activity        interceptor.Activity
	streams         limits.Streams
	channels        *channel.Manager
	codecs          []connect.Codec
	projects        *project.Resolver
	auth            *Auth
	upstream        *upmetrics.Metrics

	// closing ends when CloseStreams is called: a context, so that a
	// detached stream, which no goroutine waits on, is woken by it too.
	closing      context.Context
	closeStreams context.CancelFunc
}

// New returns a Service for the backend.
func New(cfg Config) (*Service, error) {
	if cfg.Backend == nil {
		return nil, errors.New("rpc: Config.Backend is required")
	}
	if cfg.Channels == nil {
		return nil, errors.New("rpc: Config.Channels is required")
	}
	if cfg.Auth != nil && (cfg.Auth.Client == nil || cfg.Auth.Policy == nil) {
		return nil, errors.New("rpc: Config.Auth needs Client and Policy")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	maxBytes := cfg.MaxRequestBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBytes
	}
	s := &Service{
		backend:         cfg.Backend,
		logger:          logger,
		router:          cfg.Router,
		maxRequestBytes: maxBytes,
		limits:          cfg.Limits.WithDefaults(),
		activity:        cfg.Activity,
		channels:        cfg.Channels,
		codecs:          cfg.Codecs,
		projects:        cfg.Projects,
		auth:            cfg.Auth,
		upstream:        cfg.Upstream,
	}
	s.closing, s.closeStreams = context.WithCancel(context.Background())
	if cfg.Registerer != nil {
		m, err := interceptor.NewMetrics(cfg.Registerer)
		if err != nil {
			return nil, fmt.Errorf("rpc: register metrics: %w", err)
		}
		s.metrics = m
	}
	return s, nil
}

// Handler returns the path prefix and the HTTP handler serving the service with
// its interceptors. Request bodies must come bounded (bounds.New); the
// codec's own limit only backs that up.
func (s *Service) Handler() (string, http.Handler) {
	interceptors := []connect.Interceptor{}
	if s.metrics != nil {
		interceptors = append(interceptors, s.metrics)
	}
	interceptors = append(interceptors, interceptor.NewFailureLogger(s.logger))
	// A call refused for its API key is not a client's activity.
	if s.projects != nil {
		interceptors = append(interceptors, projectInterceptor{projects: s.projects})
	}
	if s.upstream != nil {
		// Inside the project's resolution, as upstream counts: a call
		// refused for its API key is in yorkie_rpc_handled_total only.
		interceptors = append(interceptors, s.upstream.Interceptor(true))
	}
	if s.activity != nil {
		interceptors = append(interceptors, interceptor.NewActivity(s.activity))
	}
	opts := []connect.HandlerOption{
		connect.WithInterceptors(interceptors...),
		connect.WithReadMaxBytes(s.maxRequestBytes),
		connect.WithRecover(s.recovered),
		// Compressing a small answer costs more CPU than it saves bandwidth.
		connect.WithCompressMinBytes(compressMinBytes),
	}
	for _, c := range s.codecs {
		opts = append(opts, connect.WithCodec(c))
	}
	path, h := v1connect.NewYorkieServiceHandler(s, opts...)
	return path, h
}

// recovered turns a panic in a handler into an internal error for the client
// and logs it with its stack, so one bad request cannot take a connection down
// silently.
func (s *Service) recovered(ctx context.Context, spec connect.Spec, _ http.Header, p any) error {
	s.logger.ErrorContext(ctx, "panic in rpc handler", "procedure", spec.Procedure, "panic", p,
		"stack", string(debug.Stack()))
	return errinfo.New(connect.CodeInternal, errinfo.CodeInternal, errors.New("internal error"))
}

// CloseStreams ends every open Watch stream with code unavailable, so clients
// reconnect (to another node or after a restart), and refuses new ones. Unary
// calls are not affected. It is idempotent.
func (s *Service) CloseStreams() {
	s.closeStreams()
}

// ActivateClient registers the client key and returns its client ID.
func (s *Service) ActivateClient(ctx context.Context, req *connect.Request[api.ActivateClientRequest]) (*connect.Response[api.ActivateClientResponse], error) {
	key := req.Msg.GetClientKey()
	if key == "" {
		return nil, errinfo.InvalidArgument(errors.New("client_key is required"))
	}
	if len(key) > validate.MaxKeyLength*2 {
		return nil, errinfo.InvalidArgument(fmt.Errorf("client_key is longer than %d bytes", validate.MaxKeyLength*2))
	}
	if err := s.limits.CheckMetadata(req.Msg.GetMetadata()); err != nil {
		return nil, err
	}
	p := project.FromContext(ctx)
	if err := s.authorize(ctx, p, req.Spec().Procedure, req.Header(), noAttributes); err != nil {
		return nil, err
	}
	info, err := s.backend.ActivateClient(ctx, p, key, req.Msg.GetMetadata())
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&api.ActivateClientResponse{ClientId: info.ID}), nil
}

// DeactivateClient detaches the client's documents and deactivates it.
func (s *Service) DeactivateClient(ctx context.Context, req *connect.Request[api.DeactivateClientRequest]) (*connect.Response[api.DeactivateClientResponse], error) {
	clientID := req.Msg.GetClientId()
	if err := validate.ClientID(clientID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	p := project.FromContext(ctx)
	if err := s.authorize(ctx, p, req.Spec().Procedure, req.Header(), noAttributes); err != nil {
		return nil, err
	}
	if err := s.Deactivate(ctx, p, clientID); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	return connect.NewResponse(&api.DeactivateClientResponse{}), nil
}

// Deactivate is the one way a client is deactivated, by its own
// DeactivateClient and by housekeeping alike: it is detached from the
// documents other nodes own at their owners, then from those here, and its
// channel sessions on this node end. p is the client's project.
func (s *Service) Deactivate(ctx context.Context, p *database.ProjectInfo, clientID string) error {
	var epochs map[string]int64
	if s.router != nil {
		var err error
		if epochs, err = s.router.DetachRemote(ctx, p, clientID); err != nil {
			return err
		}
	}
	if err := s.backend.DeactivateClient(ctx, p, clientID, epochs); err != nil {
		return err
	}
	// The SDK sends no DetachChannel before deactivating. Sessions on
	// channels other nodes own expire with their TTL.
	s.channels.DetachClient(clientID)
	return nil
}

// AttachDocument attaches the client to the document named by the pack's key.
func (s *Service) AttachDocument(ctx context.Context, req *connect.Request[api.AttachDocumentRequest]) (*connect.Response[api.AttachDocumentResponse], error) {
	clientID := req.Msg.GetClientId()
	if err := validate.ClientID(clientID); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	pack := req.Msg.GetChangePack()
	if err := validate.Pack(pack); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	if err := checkPresences(pack); err != nil {
		return nil, err
	}
	key := pack.GetDocumentKey()
	if err := validate.DocumentKey(key); err != nil {
		return nil, errinfo.InvalidArgument(err)
	}
	procedure := req.Spec().Procedure
	p := project.FromContext(ctx)
	countIn := func(ctx context.Context, clientID string) (int, error) {
		return s.backend.CountAttachedDocuments(ctx, p, clientID)
	}
	if err := s.limits.CheckAttachments(ctx, clientID, countIn); err != nil {
		return nil, errinfo.ToConnect(err)
	}
	call := routing.DocumentCall{Kind: routing.CallAttach, Project: p, ClientID: clientID, DocumentKey: key, Header: req.Header()}
	rt, err := s.route(ctx, call)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	if err := s.authorize(ctx, p, procedure, req.Header(), oneKey(key, packVerb(pack))); err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	attach := func() (*api.AttachDocumentResponse, error) {
		docID, resp, rules, err := s.backend.AttachDocumentWithSchema(ctx, rt.Project, rt.Epoch, clientID, key, req.Msg.GetSchemaKey(), pack)
		return &api.AttachDocumentResponse{DocumentId: docID, ChangePack: resp, SchemaRules: toPBRules(rules)}, err
	}
	var att *api.AttachDocumentResponse
	for attempt := 0; ; attempt++ {
		if rt.Owner != nil {
			resp, err := relay(ctx, s, procedure, call, rt, rt.Owner.AttachDocument, req.Msg)
			if next, ok := s.reroute(ctx, call, attempt, err); ok {
				rt = next
				continue
			}
			return resp, err
		}
		att, err = servePack(ctx, s, pack, attach)
		if errors.Is(err, backend.ErrStaleRoute) && attempt < maxReroutes {
			if rt, err = s.route(ctx, call); err != nil {
				return nil, errinfo.ToConnect(err)
			}
			continue
		}
		break
	}
	if err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	docID, resp := att.DocumentId, att.ChangePack
	maxSize, err := s.backend.DocumentSizeLimit(rt.Project)
	if err != nil {
		return nil, s.failRouted(ctx, procedure, rt, fmt.Errorf("attach document %q by %s: %w", key, clientID, err))
	}
	out := connect.NewResponse(&api.AttachDocumentResponse{
		DocumentId:         docID,
		ChangePack:         resp,
		MaxSizePerDocument: int32(min(maxSize, math.MaxInt32)),
		SchemaRules:        att.SchemaRules,
	})
	s.stamp(out.Header(), rt)
	return out, nil
}

// DetachDocument detaches the client from the document.
func (s *Service) DetachDocument(ctx context.Context, req *connect.Request[api.DetachDocumentRequest]) (*connect.Response[api.DetachDocumentResponse], error) {
	return documentCall(ctx, s, req, routing.CallDetach, req.Msg.GetClientId(), req.Msg.GetDocumentId(), req.Msg.GetChangePack(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.DetachDocumentRequest, api.DetachDocumentResponse] {
			return o.DetachDocument
		},
		func(rt routing.Route, clientID, docID string, pack *api.ChangePack) (*api.DetachDocumentResponse, error) {
			resp, err := s.backend.DetachDocument(ctx, rt.Project, rt.Epoch, clientID, docID, pack)
			return &api.DetachDocumentResponse{ChangePack: resp}, err
		})
}

// RemoveDocument removes the document on behalf of the client.
func (s *Service) RemoveDocument(ctx context.Context, req *connect.Request[api.RemoveDocumentRequest]) (*connect.Response[api.RemoveDocumentResponse], error) {
	return documentCall(ctx, s, req, routing.CallRemove, req.Msg.GetClientId(), req.Msg.GetDocumentId(), req.Msg.GetChangePack(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.RemoveDocumentRequest, api.RemoveDocumentResponse] {
			return o.RemoveDocument
		},
		func(rt routing.Route, clientID, docID string, pack *api.ChangePack) (*api.RemoveDocumentResponse, error) {
			resp, err := s.backend.RemoveDocument(ctx, rt.Project, rt.Epoch, clientID, docID, pack)
			return &api.RemoveDocumentResponse{ChangePack: resp}, err
		})
}

// PushPullChanges stores the client's changes and returns the others'.
func (s *Service) PushPullChanges(ctx context.Context, req *connect.Request[api.PushPullChangesRequest]) (*connect.Response[api.PushPullChangesResponse], error) {
	return documentCall(ctx, s, req, routing.CallPushPull, req.Msg.GetClientId(), req.Msg.GetDocumentId(), req.Msg.GetChangePack(),
		func(o v1connect.YorkieServiceClient) relayFunc[api.PushPullChangesRequest, api.PushPullChangesResponse] {
			return o.PushPullChanges
		},
		func(rt routing.Route, clientID, docID string, pack *api.ChangePack) (*api.PushPullChangesResponse, error) {
			resp, err := s.backend.PushPull(ctx, rt.Project, rt.Epoch, clientID, docID, pack, req.Msg.GetPushOnly())
			return &api.PushPullChangesResponse{ChangePack: resp}, err
		})
}

// relayFunc is a unary method of the owner's service client.
type relayFunc[Req, Res any] func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error)

// documentCall serves a unary call on an attached document: it validates
// the shared fields, routes the call, and either relays it to the owner or
// serves it here, answering with the owner's session key either way.
func documentCall[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], kind routing.CallKind,
	clientID, docID string, pack *api.ChangePack,
	method func(v1connect.YorkieServiceClient) relayFunc[Req, Res],
	serve func(rt routing.Route, clientID, docID string, pack *api.ChangePack) (*Res, error),
) (*connect.Response[Res], error) {
	if err := validateDocumentCall(clientID, docID, pack); err != nil {
		return nil, err
	}
	p := project.FromContext(ctx)
	call := routing.DocumentCall{Kind: kind, Project: p, ClientID: clientID, DocumentID: docID, Header: req.Header()}
	return routedCall(ctx, s, req, call, s.documentByID(p, docID, packVerb(pack)), method,
		func(rt routing.Route) (*Res, error) {
			return servePack(ctx, s, pack, func() (*Res, error) { return serve(rt, clientID, docID, pack) })
		})
}

// routedCall routes a validated unary call on a document, authorizes it,
// and either relays it to the owner or serves it here on the route (its
// project and owner epoch), answering with the owner's session key either
// way.
func routedCall[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], call routing.DocumentCall,
	attrs attributes, method func(v1connect.YorkieServiceClient) relayFunc[Req, Res],
	serve func(rt routing.Route) (*Res, error),
) (*connect.Response[Res], error) {
	procedure := req.Spec().Procedure
	rt, err := s.route(ctx, call)
	if err != nil {
		return nil, errinfo.ToConnect(err)
	}
	// An operator's call relayed by a node asks no webhook: the operator
	// was authorised where the call began.
	if call.Kind != routing.CallAdmin {
		if err := s.authorize(ctx, call.Project, procedure, req.Header(), attrs); err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
	}
	for attempt := 0; ; attempt++ {
		if rt.Owner != nil {
			resp, err := relay(ctx, s, procedure, call, rt, method(rt.Owner), req.Msg)
			if next, ok := s.reroute(ctx, call, attempt, err); ok {
				rt = next
				continue
			}
			return resp, err
		}
		resp, err := serve(rt)
		if staleServe(call, err) && attempt < maxReroutes {
			// This node's binding was older than the document's claim (its
			// owner changed while the binding stood) and has been dropped:
			// route once more, so a failback costs the client no error.
			if rt, err = s.route(ctx, call); err != nil {
				return nil, errinfo.ToConnect(err)
			}
			continue
		}
		if err != nil {
			return nil, s.failRouted(ctx, procedure, rt, err)
		}
		out := connect.NewResponse(resp)
		s.stamp(out.Header(), rt)
		return out, nil
	}
}

// validateDocumentCall checks the fields shared by the calls on an attached
// document.
func validateDocumentCall(clientID, docID string, pack *api.ChangePack) error {
	if err := validate.ClientID(clientID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	if err := validate.DocumentID(docID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	if err := validate.Pack(pack); err != nil {
		return errinfo.InvalidArgument(err)
	}
	return checkPresences(pack)
}

// Watch streams the events of one document: first the initialization listing
// its watchers, then CHANGED, WATCHED and UNWATCHED events.
func (s *Service) Watch(ctx context.Context, req *connect.Request[api.WatchRequest], stream *connect.ServerStream[api.WatchResponse]) error {
	clientID := req.Msg.GetClientId()
	if err := validate.ClientID(clientID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	resources := req.Msg.GetResources()
	if len(resources) == 0 || len(resources) > maxWatchResources {
		return errinfo.InvalidArgument(fmt.Errorf("watch takes 1 to %d resources, got %d", maxWatchResources, len(resources)))
	}
	if len(resources) > 1 {
		return s.watchResources(ctx, req, stream)
	}
	if ch := resources[0].GetChannel(); ch != nil {
		return s.watchChannel(ctx, req, stream, ch.GetChannelKey())
	}
	doc := resources[0].GetDocument()
	if doc == nil {
		return errinfo.InvalidArgument(errors.New("watch resource names no document"))
	}
	docID := doc.GetDocumentId()
	if err := validate.DocumentID(docID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	call := routing.DocumentCall{Kind: routing.CallWatch, Project: project.FromContext(ctx), ClientID: clientID, DocumentID: docID, Header: req.Header()}
	changed := func() *api.WatchResponse {
		return &api.WatchResponse{Body: &api.WatchResponse_Event{Event: &api.WatchEvent{Event: &api.WatchEvent_DocEvent{
			DocEvent: &api.DocWatchEvent{DocumentId: docID, Event: &api.DocEvent{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED}},
		}}}}
	}
	// The relay holds the message, not the request and its headers.
	msg := req.Msg
	return serveDocWatch(ctx, s, req, stream, call, changed, func(owner v1connect.YorkieServiceClient, call routing.DocumentCall) ownerStream[api.WatchResponse] {
		return func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchResponse], error) {
			return owner.Watch(ctx, relayRequest(msg, call))
		}
	}, func(ctx context.Context, procedure string, rt routing.Route, send func(*api.WatchResponse) error) (*docWatch, error) {
		return s.openWatch(ctx, procedure, rt, clientID, docID,
			func(watchers []string) error {
				return send(&api.WatchResponse{Body: &api.WatchResponse_Initialization{
					Initialization: &api.WatchInitialization{ResourceInits: []*api.ResourceInit{{
						Init: &api.ResourceInit_DocumentInit{DocumentInit: &api.DocumentInit{
							DocumentId: docID,
							ClientIds:  watchers,
						}},
					}}},
				}})
			},
			func(ev *api.DocEvent) error {
				return send(&api.WatchResponse{Body: &api.WatchResponse_Event{
					Event: &api.WatchEvent{Event: &api.WatchEvent_DocEvent{
						DocEvent: &api.DocWatchEvent{DocumentId: docID, Event: ev},
					}},
				}})
			})
	})
}

// WatchDocument is the deprecated single-document form of Watch.
func (s *Service) WatchDocument(ctx context.Context, req *connect.Request[api.WatchDocumentRequest], stream *connect.ServerStream[api.WatchDocumentResponse]) error {
	clientID := req.Msg.GetClientId()
	if err := validate.ClientID(clientID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	docID := req.Msg.GetDocumentId()
	if err := validate.DocumentID(docID); err != nil {
		return errinfo.InvalidArgument(err)
	}
	call := routing.DocumentCall{Kind: routing.CallWatch, Project: project.FromContext(ctx), ClientID: clientID, DocumentID: docID, Header: req.Header()}
	changed := func() *api.WatchDocumentResponse {
		return &api.WatchDocumentResponse{Body: &api.WatchDocumentResponse_Event{
			Event: &api.DocEvent{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED},
		}}
	}
	// The relay holds the message, not the request and its headers.
	msg := req.Msg
	return serveDocWatch(ctx, s, req, stream, call, changed, func(owner v1connect.YorkieServiceClient, call routing.DocumentCall) ownerStream[api.WatchDocumentResponse] {
		return func(ctx context.Context) (*connect.ServerStreamForClient[api.WatchDocumentResponse], error) {
			return owner.WatchDocument(ctx, relayRequest(msg, call))
		}
	}, func(ctx context.Context, procedure string, rt routing.Route, send func(*api.WatchDocumentResponse) error) (*docWatch, error) {
		return s.openWatch(ctx, procedure, rt, clientID, docID,
			func(watchers []string) error {
				return send(&api.WatchDocumentResponse{Body: &api.WatchDocumentResponse_Initialization_{
					Initialization: &api.WatchDocumentResponse_Initialization{ClientIds: watchers},
				}})
			},
			func(ev *api.DocEvent) error {
				return send(&api.WatchDocumentResponse{Body: &api.WatchDocumentResponse_Event{Event: ev}})
			})
	})
}

// ownerStream opens the relayed stream on the owner of a watched resource.
type ownerStream[Res any] func(context.Context) (*connect.ServerStreamForClient[Res], error)

// serveWatchStream is what every watch stream does before it watches: it
// counts the stream against the client's limit for as long as it lasts,
// routes and authorizes the call, then relays it to the resource's owner
// (opened by relay) or, when this node owns it, stamps the session key and
// runs local.
func serveWatchStream[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], stream *connect.ServerStream[Res], call routing.DocumentCall,
	changed func() *Res, relay openRelay[Res], local func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) error,
	open openLocal[Res],
) error {
	closeStream, err := s.streams.Open(call.ClientID, s.limits.MaxWatchStreamsPerClient)
	if err != nil {
		return err
	}
	detached := false
	defer func() {
		if !detached {
			closeStream()
		}
	}()
	procedure := req.Spec().Procedure
	rt, err := s.routeWatch(ctx, procedure, call, stream.ResponseHeader())
	if err != nil {
		return err
	}
	if err := s.authorize(ctx, call.Project, procedure, req.Header(), noAttributes); err != nil {
		return s.failRouted(ctx, procedure, rt, err)
	}
	if st := streamconn.FromContext(ctx); st != nil && rt.Owner == nil {
		// Served here over HTTP/1.1: the stream goes on on its own
		// connection, and this goroutine, deep in net/http and connect,
		// returns instead of waiting for the stream's whole life.
		// The stream's context keeps the call's project and nothing of the
		// call itself, which holds net/http's connection.
		base := project.NewContext(context.Background(), project.FromContext(ctx))
		// Routing again after a move needs only a few of the request's
		// headers, not the whole map.
		call.Header = s.routeHeaders(call.Header)
		var f *watchFollow[Res]
		detached = st.Detach(base, func(ctx context.Context, header http.Header, send func(any) error, wake func()) (bool, error) {
			if f == nil {
				f = newWatchFollow(s, procedure, call, rt, changed, relay, header, func(m *Res) error { return send(m) })
			}
			// nil once the head went out: a detached stream keeps no header.
			f.header = header
			var done bool
			var err error
			if open != nil {
				done, err = f.stepDetached(ctx, open, wake)
			} else {
				// A channel stream is served whole in one step.
				done, err = true, f.serve(ctx, local)
			}
			if done {
				closeStream()
			}
			return done, err
		})
		if detached {
			return nil
		}
	}
	return followWatch(ctx, s, procedure, call, rt, changed, relay, local, stream.ResponseHeader(), stream.Send)
}

// serveDocWatch serves a document Watch as serveWatchStream does, the
// subscription here set up by open.
func serveDocWatch[Req, Res any](ctx context.Context, s *Service, req *connect.Request[Req], stream *connect.ServerStream[Res], call routing.DocumentCall,
	changed func() *Res, relay openRelay[Res], open openLocal[Res],
) error {
	return serveWatchStream(ctx, s, req, stream, call, changed, relay, func(ctx context.Context, procedure string, rt routing.Route, send func(*Res) error) error {
		w, err := open(ctx, procedure, rt, send)
		if err != nil {
			return err
		}
		defer w.close()
		for {
			select {
			case <-ctx.Done():
			case <-s.closing.Done():
			case <-w.sub.Done():
			case <-w.sub.Ready():
			}
			if more, err := w.pending(ctx); !more {
				return err
			}
		}
	}, open)
}

// docWatch is a document event stream served here, between its events.
type docWatch struct {
	s         *Service
	procedure string
	sub       *backend.Subscription
	closed    func() // the watch's end in upstream's metrics
	sendEvent func(ev *api.DocEvent) error
}

// openWatch starts a document event stream for both Watch forms: it
// subscribes and sends the initialization. pending then relays the events
// until the client leaves, the server shuts down, or the backend ends the
// subscription.
func (s *Service) openWatch(ctx context.Context, procedure string, rt routing.Route, clientID, docID string,
	sendInit func(watchers []string) error, sendEvent func(ev *api.DocEvent) error,
) (*docWatch, error) {
	sub, watchers, err := s.backend.Watch(ctx, rt.Project, rt.Epoch, clientID, docID)
	if err != nil {
		return nil, s.failRouted(ctx, procedure, rt, err)
	}
	w := &docWatch{s: s, procedure: procedure, sub: sub, closed: s.upstream.WatchOpened(rt.Project), sendEvent: sendEvent}
	if watchers == nil {
		watchers = []string{}
	}
	if err := sendInit(watchers); err != nil {
		w.close()
		return nil, s.streamEnded(ctx, procedure, err)
	}
	return w, nil
}

// close ends the watch's subscription.
func (w *docWatch) close() {
	w.closed()
	w.sub.Close()
}

// pending sends the events queued since the watch last woke, and reports
// false with the stream's error when the stream ended instead (nil for a
// client that left). The caller closes the watch then.
func (w *docWatch) pending(ctx context.Context) (bool, error) {
	switch {
	case ctx.Err() != nil:
		return false, nil
	case w.s.closing.Err() != nil:
		return false, errinfo.New(connect.CodeUnavailable, errinfo.CodeShuttingDown, fault.ErrShuttingDown)
	case w.sub.Ended():
		// Not Done: a detached stream's subscription makes no channel.
		return false, w.s.subscriptionEnded(ctx, w.procedure, w.sub.Err())
	}
	for ev, ok := w.sub.Next(); ok; ev, ok = w.sub.Next() {
		out := &api.DocEvent{Type: ev.Type, Publisher: ev.Publisher}
		if err := w.sendEvent(out); err != nil {
			return false, w.s.streamEnded(ctx, w.procedure, err)
		}
		w.s.watchEventSent(ctx, out)
	}
	return true, nil
}

// routeWatch refuses new streams while the server shuts down, then routes.
// A refused stream's session key also goes into the response headers:
// streams carry an error's metadata in the final frame, where clients and
// proxies that route by the header would not look.
func (s *Service) routeWatch(ctx context.Context, procedure string, call routing.DocumentCall, header http.Header) (routing.Route, error) {
	select {
	case <-s.closing.Done():
		return routing.Route{}, errinfo.New(connect.CodeUnavailable, errinfo.CodeShuttingDown, fault.ErrShuttingDown)
	default:
	}
	rt, err := s.route(ctx, call)
	if err != nil {
		err = errinfo.ToConnect(err)
		var ce *connect.Error
		if errors.As(err, &ce) && s.router != nil {
			if key := ce.Meta().Get(s.router.SessionKeyHeader()); key != "" {
				header.Set(s.router.SessionKeyHeader(), key)
			}
		}
		return routing.Route{}, err
	}
	return rt, nil
}

// subscriptionEnded maps the reason the backend ended a subscription. The
// client must come back (reconnect, then catch up with a PushPull), so the code
// is always the retryable unavailable; the ErrorInfo still names the reason.
func (s *Service) subscriptionEnded(ctx context.Context, procedure string, reason error) error {
	if reason == nil {
		reason = errors.New("subscription ended")
	}
	name := errinfo.CodeUnavailable
	if _, n, ok := errinfo.Classify(reason); ok {
		name = n
	}
	s.logger.DebugContext(ctx, "watch subscription ended", "procedure", procedure, "reason", reason)
	return errinfo.New(connect.CodeUnavailable, name, fmt.Errorf("watch ended: %w", reason))
}

// streamEnded handles a failed Send: the client went away or the connection
// broke, so there is no one left to tell.
func (s *Service) streamEnded(ctx context.Context, procedure string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	s.logger.DebugContext(ctx, "watch stream send failed", "procedure", procedure, "error", err)
	return err
}

// Service must serve every procedure of the YorkieService.
var _ v1connect.YorkieServiceHandler = (*Service)(nil)
