// Package server assembles a Yorkie server node: the backend with its
// database, the YorkieService over Connect, gRPC and gRPC-web on one port
// (HTTP/1.1 and cleartext HTTP/2), health checks, and a separate profiling
// port with Prometheus metrics and, when enabled, pprof.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/admin/docview"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/certfile"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/metrics"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/rpc/adminowner"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
	"github.com/yorkie-affinity/yorkie/server/rpc/clustersvc"
	"github.com/yorkie-affinity/yorkie/server/rpc/http1"
	"github.com/yorkie-affinity/yorkie/server/rpc/jsoncodec"
	"github.com/yorkie-affinity/yorkie/server/rpc/streamconn"
)

// Server is one Yorkie server node. New builds every part of it and binds
// its ports; nothing is added later, and Start only starts the parts.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	registry *prometheus.Registry
	db       database.Database
	ownsDB   bool
	backend  *backend.Backend
	channels *channel.Manager
	service  *rpc.Service
	// owners serves the owner's side of the AdminService's document and
	// channel calls (for admin, and for the ClusterService in a cluster).
	owners *adminowner.Owners
	// codecs are the Connect JSON codecs the RPC service reads and writes.
	codecs []connect.Codec
	health *grpchealth.StaticChecker
	// draining is set when shutdown begins: /healthz then answers 503.
	draining atomic.Bool
	// routes is the router the RPC port routes with: the cluster's, or the
	// one a test staged (WithRouter).
	routes rpc.Router
	// cluster is the node's part in its cluster (nothing when a test
	// staged the routing); mgr and peers are its manager and peer
	// connections, nil then.
	cluster  membership
	mgr      *affinity.Manager
	peers    *routing.Peers
	tracker  *housekeeping.Tracker
	projects *project.Resolver
	house    *housekeeping.Housekeeper
	admin    *admin.Service
	webhooks *webhooks
	upstream *metrics.Metrics

	// ports are what the node serves: the RPC port and, unless disabled,
	// the profiling port, each with its bound listener.
	ports []*boundPort

	// rpcCerts and profilingCerts serve the ports' certificates (nil in
	// cleartext); peerTLS is how this node calls others (nil: cleartext).
	rpcCerts, profilingCerts *certfile.Reloader
	peerTLS                  *tls.Config

	// failed closes when the RPC port fails for good; failErr says why.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error

	mu            sync.Mutex
	started       bool
	rpcAddr       string
	profilingAddr string
	serveDone     sync.WaitGroup
	shutdownOnce  sync.Once
	shutdownErr   error
	// drainCut ends a shutdown's drain early (SkipDrain).
	drainCut     chan struct{}
	drainCutOnce sync.Once
}

// boundPort is one port of the node: what serves it and its listener.
type boundPort struct {
	name string
	port port
	ln   net.Listener
	// onFail, if set, learns that the port stopped serving for another
	// reason than a shutdown.
	onFail func(error)
}

// New builds a whole node in dependency order: it binds the ports (or takes
// the listeners WithListeners gives), then builds the metrics, the backend,
// the cluster membership and router, the RPC services, housekeeping and the
// AdminService, each with all it needs. ctx bounds what New asks the session
// store (the cluster secret). Start starts the node; Shutdown or Abort
// releases it, started or not.
func New(ctx context.Context, cfg Config, opts ...Option) (_ *Server, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{
		cfg: cfg, logger: logger, registry: prometheus.NewRegistry(), db: cfg.DB,
		failed: make(chan struct{}), drainCut: make(chan struct{}),
	}
	// What New made is released again when a later step fails.
	var undo []func()
	defer func() {
		if err != nil {
			for _, f := range slices.Backward(undo) {
				f()
			}
		}
	}()

	rpcLn, profLn, err := s.bind(ctx, o)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = rpcLn.Close() })
	if profLn != nil {
		undo = append(undo, func() { _ = profLn.Close() })
	}
	s.rpcAddr = rpcLn.Addr().String()
	if profLn != nil {
		s.profilingAddr = profLn.Addr().String()
	}
	if s.db == nil {
		s.db = memory.New()
		s.ownsDB = true
		undo = append(undo, func() { _ = s.db.Close(context.Background()) })
	}
	if err := s.loadTLS(); err != nil {
		return nil, err
	}

	// Metrics, channels, projects and webhooks depend on nothing else.
	if err := s.registry.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("server: register go collector: %w", err)
	}
	if err := s.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("server: register process collector: %w", err)
	}
	backendMetrics := &backend.Metrics{}
	if err := registerBackendMetrics(s.registry, backendMetrics); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	channelMetrics, err := channel.NewMetrics(s.registry)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.channels = channel.New(channel.Config{
		SessionTTL:      cfg.ChannelSessionTTL,
		MaxPayloadBytes: cfg.ChannelMaxPayloadBytes,
		Logger:          logger,
		Metrics:         channelMetrics,
	})
	undo = append(undo, s.channels.Close)
	if s.upstream, err = metrics.New(metrics.Config{
		Registerer: s.registry,
		Hostname:   cfg.Hostname,
		Version:    cfg.Admin.Version,
		Channels:   s.channels.Sessions,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	backendMetrics.AnswerSnapshotSeconds = s.upstream.SnapshotSeconds()
	backendMetrics.SnapshotRuns = s.upstream.Background("snapshot")
	if s.projects, err = project.NewResolver(project.ResolverConfig{
		DB:                s.db,
		UseDefaultProject: !cfg.DisableDefaultProject,
		CacheTTL:          cfg.ProjectCacheTTL,
		Now:               o.clock,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.webhooks, err = newWebhooks(cfg.Webhooks, logger, s.registry); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = s.webhooks.close(context.Background()) })

	// The backend and the affinity manager refer to each other: the
	// backend reports fenced writes to the manager, the manager hands the
	// documents it lost back to the backend. The backend is built first,
	// with a report that reaches the manager built right after it; neither
	// calls the other before Start.
	var mgr *affinity.Manager
	bcfg := backend.Config{
		OnRootChanged:       s.webhooks.rootChanged,
		DB:                  s.db,
		MaxChangesPerPack:   cfg.MaxChangesPerPack,
		Logger:              logger,
		Metrics:             backendMetrics,
		SnapshotInterval:    cfg.SnapshotInterval,
		SnapshotThreshold:   cfg.SnapshotThreshold,
		MaxSizePerDocument:  cfg.MaxSizePerDocument,
		DocumentCacheBytes:  cfg.DocumentCacheBytes,
		SizeHardLimitFactor: cfg.SizeHardLimitFactor,
	}
	if o.router == nil {
		bcfg.OnFenced = func(_ string, name backend.DocName) {
			ctx, cancel := context.WithTimeout(context.Background(), fencedReleaseTimeout)
			defer cancel()
			mgr.Fenced(ctx, project.ScopedKey(name.Project, name.Key))
		}
	}
	if s.backend, err = backend.New(bcfg); err != nil {
		return nil, fmt.Errorf("server: create backend: %w", err)
	}
	undo = append(undo, func() { _ = s.backend.Close(context.Background()) })

	var router *routing.Router
	if o.router != nil {
		s.routes, s.cluster = o.router, staged{}
	} else {
		j, err := s.newCluster(ctx)
		if err != nil {
			return nil, err
		}
		undo = append(undo, func() { _ = j.close() })
		mgr, router, s.peers = j.mgr, j.router, j.peers
		s.mgr, s.routes, s.cluster = j.mgr, j.router, j
	}

	s.tracker = housekeeping.NewTracker()
	s.health = grpchealth.NewStaticChecker(v1connect.YorkieServiceName)
	var forwarded func(http.Header) bool
	if router != nil {
		forwarded = func(h http.Header) bool { return forwardedBy(h, router.Authentic) }
	}
	s.codecs = jsonCodecs(cfg.DisableFastJSON)
	if s.service, err = rpc.New(rpc.Config{
		Backend:         s.backend,
		Logger:          logger,
		Registerer:      s.registry,
		MaxRequestBytes: cfg.MaxRequestBytes,
		Router:          s.routes,
		Limits:          cfg.Limits,
		Activity:        s.tracker,
		Channels:        s.channels,
		Codecs:          s.codecs,
		Projects:        s.projects,
		Auth:            s.webhooks.rpcAuth(forwarded),
		Upstream:        s.upstream,
	}); err != nil {
		return nil, fmt.Errorf("server: create rpc service: %w", err)
	}
	if s.house, err = s.newHousekeeper(o); err != nil {
		return nil, err
	}
	owners := adminowner.Config{Backend: s.backend, Channels: s.channels, Router: s.routes, Logger: logger}
	if router != nil {
		owners.Cluster = router
	}
	if s.owners, err = adminowner.New(owners); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.admin, err = admin.New(ctx, admin.Config{
		Settings: cfg.Admin, DB: s.db, Logger: logger, Registerer: s.registry, Now: o.clock,
		Interceptors:                     []connect.Interceptor{s.upstream.Interceptor(false)},
		DefaultClientDeactivateThreshold: cfg.ClientDeactivateThreshold,
		OnProjectUpdated: func(p *database.ProjectInfo) {
			s.projects.Updated(p)
		},
		Compactor: compactor{s},
		Owners:    s.owners,
		Revisions: s.service,
		Drainer:   drainer{s},
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}

	rpcPort, err := s.newRPCPort(router)
	if err != nil {
		return nil, err
	}
	s.ports = append(s.ports, &boundPort{name: "rpc", port: rpcPort, ln: rpcLn, onFail: s.fail})
	if profLn != nil {
		prof, err := s.newProfilingPort()
		if err != nil {
			return nil, err
		}
		s.ports = append(s.ports, &boundPort{name: "profiling", port: prof, ln: profLn})
	}
	return s, nil
}

// bind opens the RPC port and, unless it is disabled, the profiling port,
// or takes the listeners WithListeners gave.
func (s *Server) bind(ctx context.Context, o options) (rpcLn, profLn net.Listener, err error) {
	cfg := s.cfg
	rpcLn = o.rpcListener
	if rpcLn == nil {
		// Bound now, listening once Start serves (bindTCP).
		if rpcLn, err = bindTCP(ctx, net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.RPCPort))); err != nil {
			return nil, nil, fmt.Errorf("server: listen rpc port: %w", err)
		}
	}
	if cfg.ProfilingPort < 0 {
		return rpcLn, nil, nil
	}
	profLn = o.profilingListener
	if profLn == nil {
		profHost := cfg.ProfilingHost
		if profHost == "" {
			profHost = cfg.Host
		}
		if profLn, err = bindTCP(ctx, net.JoinHostPort(profHost, strconv.Itoa(cfg.ProfilingPort))); err != nil {
			_ = rpcLn.Close()
			return nil, nil, fmt.Errorf("server: listen profiling port: %w", err)
		}
	}
	return rpcLn, profLn, nil
}

// newRPCPort builds what serves the RPC port: the YorkieService, in a
// cluster the node-to-node service, the AdminService, health checks and the
// dashboard, behind the request bounds and CORS, over net/http or the fast
// HTTP/1.1 loop.
func (s *Server) newRPCPort(router *routing.Router) (port, error) {
	cfg, logger, svc := s.cfg, s.logger, s.service
	mux := http.NewServeMux()
	path, yorkieHandler := svc.Handler()
	var streams *streamconn.Server
	if !cfg.DisableFastHTTP1 {
		// Watch streams over HTTP/1.1 go on on their own connections once
		// set up, holding no net/http goroutine or buffers.
		var err error
		if streams, err = streamconn.New(streamconn.Config{Paths: rpc.StreamPaths(), Codecs: s.codecs, Logger: logger}); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		yorkieHandler = streams.Wrap(yorkieHandler)
	}
	mux.Handle(path, yorkieHandler)
	// The AdminService's requests keep the small default bound.
	mux.Handle(s.admin.Handler())
	mux.Handle(s.admin.SessionHandler())
	if cfg.DashboardDir != "" {
		dash, err := dashboardHandler(cfg.DashboardDir)
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		mux.Handle(dashboardPrefix, dash)
		mux.Handle("GET /dashboard", dash)
	}
	// Every body is bounded, after decompression, before any handler runs.
	limits := bounds.Config{
		Rules:            []bounds.Rule{{Prefix: path, MaxBytes: cfg.MaxRequestBytes}},
		ReadBodyTimeout:  cfg.ReadBodyTimeout,
		MaxInflightBytes: cfg.MaxInflightRequestBytes,
	}
	if router != nil {
		csvc, err := clustersvc.New(clustersvc.Config{
			Backend: s.backend, Router: router, Authentic: router.Authentic, Logger: logger, FindProject: s.db.FindProjectByID,
			Owner: s.owners, Upstream: s.upstream, Drain: s.drainHere, Channels: s.channels,
			Reach: s.mgr.Reaches,
		})
		if err != nil {
			return nil, fmt.Errorf("server: create cluster service: %w", err)
		}
		mux.Handle(csvc.Handler())
		limits.Rules = append(limits.Rules, csvc.Bound())
	}
	mux.Handle(grpchealth.NewHandler(s.health, connect.WithReadMaxBytes(bounds.DefaultSmallRequestBytes)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// A node shutting down says so at once, so a balancer's readiness
		// check stops sending it new calls while it hands its work over.
		if s.draining.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("draining"))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	bounded := bounds.New(mux, limits)
	srv := newHTTPServer(withAdminCORS(withCORS(bounded, cfg.AllowedOrigins, s.exposedHeaders()), bounded, cfg.AdminAllowedOrigins),
		logger, cfg.ReadHeaderTimeout)
	if cfg.IdleTimeout > 0 {
		srv.IdleTimeout = cfg.IdleTimeout
	}
	var served port = srv
	if s.rpcCerts != nil {
		srv.TLSConfig = s.rpcCerts.ServerConfig(rpcNextProtos...)
		srv.Protocols.SetHTTP2(true)
		served = tlsPort{srv}
	}
	if cfg.DisableFastHTTP1 {
		return served, nil
	}
	fast, err := http1.New(http1.Config{
		Fallback:        srv,
		Paths:           rpc.UnaryPaths(),
		Logger:          logger,
		MaxRequestBytes: cfg.MaxRequestBytes,
		ReadBodyTimeout: cfg.ReadBodyTimeout,
		Registerer:      s.registry,
		TLS:             srv.TLSConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return streamsPort{port: fast, streams: streams}, nil
}

// streamsPort is the RPC port with the Watch streams detached from it: its
// shutdown also waits for them to end (the service ends them when it closes
// its streams), and closing it closes them.
type streamsPort struct {
	port
	streams *streamconn.Server
}

func (p streamsPort) Shutdown(ctx context.Context) error {
	return errors.Join(p.port.Shutdown(ctx), p.streams.Wait(ctx))
}

func (p streamsPort) Close() error {
	p.streams.Close()
	return p.port.Close()
}

// newProfilingPort builds the operators' port.
func (s *Server) newProfilingPort() (port, error) {
	cfg, logger := s.cfg, s.logger
	pmux := http.NewServeMux()
	pmux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	// Operators' read-only views, on the operators' port only: they name
	// documents by key and show their content.
	views, err := docview.New(docview.Config{Source: s.admin, Logger: logger, Registerer: s.registry})
	if err != nil {
		return nil, fmt.Errorf("server: create document view: %w", err)
	}
	views.Register(pmux)
	if cfg.PprofEnabled {
		pmux.HandleFunc("/debug/pprof/", pprof.Index)
		pmux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		pmux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		pmux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		pmux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := newHTTPServer(bounds.New(pmux, bounds.Config{ReadBodyTimeout: cfg.ReadBodyTimeout}),
		logger, cfg.ReadHeaderTimeout)
	if s.profilingCerts == nil {
		return srv, nil
	}
	srv.TLSConfig = s.profilingCerts.ServerConfig("http/1.1")
	return tlsPort{srv}, nil
}

// newHousekeeper builds the node's housekeeping: it deactivates clients as
// DeactivateClient does, detaching at the owners first, and in a cluster
// scans only while this node holds the housekeeping role.
func (s *Server) newHousekeeper(o options) (*housekeeping.Housekeeper, error) {
	var role housekeeping.Role
	if s.mgr != nil {
		role = s.mgr
	}
	svc := s.service
	h, err := housekeeping.New(housekeeping.Config{
		Interval:            s.cfg.HousekeepingInterval,
		DeactivateThreshold: s.cfg.ClientDeactivateThreshold,
		CandidatesLimit:     s.cfg.HousekeepingCandidatesLimit,
		DB:                  s.db,
		Tracker:             s.tracker,
		Deactivate: func(ctx context.Context, c *database.ClientInfo) error {
			// The client is deactivated in its own project, as its own
			// DeactivateClient call would be.
			p, err := s.db.FindProjectByID(ctx, c.ProjectID)
			if err != nil {
				return fmt.Errorf("project %s of client %s: %w", c.ProjectID, c.ID, err)
			}
			return svc.Deactivate(ctx, p, c.ID)
		},
		Role:       role,
		Now:        o.clock,
		Logger:     s.logger,
		Registerer: s.registry,
		OnRun:      o.onHousekeeping,
		Compaction: &housekeeping.Compaction{
			MinChanges: s.cfg.HousekeepingCompactionMinChanges,
			Documents:  s.db,
			Compact:    s.compactIdle,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return h, nil
}

// exposedHeaders lists the response headers a browser page may read: the
// owner's session key, which the redirect wrapper sends back.
func (s *Server) exposedHeaders() []string {
	if s.mgr == nil {
		return nil
	}
	return []string{s.cfg.SessionKeyHeader}
}

// port is what serves a port: an http.Server, or an http1.Server in front
// of one.
type port interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
	Close() error
}

// jsonCodecs returns the codecs the RPC service reads and writes Connect
// JSON with: package jsoncodec's, or none (connect's protojson) when
// disabled.
func jsonCodecs(disabled bool) []connect.Codec {
	if disabled {
		return nil
	}
	return []connect.Codec{
		jsoncodec.New(jsoncodec.Config{Name: jsoncodec.Name}),
		jsoncodec.New(jsoncodec.Config{Name: jsoncodec.NameUTF8}),
	}
}

// newHTTPServer returns an http.Server speaking HTTP/1.1 and cleartext HTTP/2
// (prior knowledge), as gRPC clients need HTTP/2 and browsers use HTTP/1.1.
// There is no read or write timeout: Watch streams live as long as clients.
func newHTTPServer(h http.Handler, logger *slog.Logger, readHeaderTimeout time.Duration) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	newIdleCloser(goAwayGrace).install(srv)
	return srv
}

// registerBackendMetrics exposes the backend's counters on reg.
func registerBackendMetrics(reg prometheus.Registerer, m *backend.Metrics) error {
	counter := func(name, help string, load func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "backend", Name: name, Help: help,
		}, func() float64 { return float64(load()) })
	}
	cs := []prometheus.Collector{
		counter("pushpulls_total", "PushPull, attach, detach and remove exchanges served.", m.PushPulls.Load),
		counter("changes_stored_total", "Changes appended to document logs.", m.ChangesStored.Load),
		counter("changes_sent_total", "Changes returned to clients.", m.ChangesSent.Load),
		counter("pulls_from_window_total", "Pulls served from the newest changes the owner kept of its own appends, without reading the log.", m.PullsFromWindow.Load),
		counter("conflicts_total", "Appends that lost a server_seq race and were retried.", m.Conflicts.Load),
		counter("changes_refused_total", "Pushed changes refused: they do not apply or would exceed the document size limit.", m.ChangesRefused.Load),
		counter("documents_built_total", "Documents built from a snapshot and the change log.", m.DocumentsBuilt.Load),
		counter("documents_warmed_total", "Documents built (or brought forward) here for a draining node before their binding moved here.", m.DocumentsWarmed.Load),
		counter("snapshots_stored_total", "Snapshots stored.", m.SnapshotsStored.Load),
		counter("snapshot_failures_total", "Snapshots that failed to encode or store.", m.SnapshotFailures.Load),
		counter("snapshots_sent_total", "Answers that carried a snapshot instead of changes.", m.SnapshotsSent.Load),
		counter("snapshots_coalesced_total", "Due snapshots passed over for a newer one while the document's previous snapshot was being taken.", m.SnapshotsCoalesced.Load),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "backend", Name: "snapshot_lock_seconds_total",
			Help: "Time documents' locks were held to hand snapshots over to be taken off the lock.",
		}, func() float64 { return float64(m.SnapshotLockNanos.Load()) / 1e9 }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "yorkie", Subsystem: "backend", Name: "snapshot_answer_lock_seconds_total",
			Help: "Time documents' locks were held to prepare snapshot answers, which are encoded after the lock is released.",
		}, func() float64 { return float64(m.AnswerLockNanos.Load()) / 1e9 }),
		counter("garbage_collected_total", "Tombstones purged from the documents held in memory.", m.GarbageCollected.Load),
		counter("revisions_stored_total", "Document revisions stored, on request or at snapshots.", m.RevisionsStored.Load),
		counter("revisions_restored_total", "Document revisions restored.", m.RevisionsRestored.Load),
		counter("compactions_total", "Documents whose history was compacted into one change.", m.Compactions.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "yorkie", Subsystem: "backend", Name: "document_cache_bytes",
			Help: "Estimated heap bytes of the documents held built in memory, with the states their snapshots were taken of.",
		}, func() float64 { return float64(m.CachedDocumentBytes.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "yorkie", Subsystem: "backend", Name: "subscriptions",
			Help: "Live Watch subscriptions.",
		}, func() float64 { return float64(m.Subscriptions.Load()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register backend metrics: %w", err)
		}
	}
	return nil
}

// Start joins the cluster and serves the bound ports in the background.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errAlreadyStarted
	}
	if err := s.admin.Start(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := s.cluster.join(ctx); err != nil {
		return err
	}
	for _, p := range s.ports {
		if ln, ok := p.ln.(*boundListener); ok {
			if err := ln.listen(); err != nil {
				return fmt.Errorf("server: %s port: %w", p.name, err)
			}
		}
	}
	for _, p := range s.ports {
		s.serve(p)
	}
	s.house.Start()
	s.started = true
	s.logger.InfoContext(ctx, "server started", "rpc_addr", s.rpcAddr, "profiling_addr", s.profilingAddr)
	return nil
}

// serve runs a port until it is shut down.
func (s *Server) serve(p *boundPort) {
	s.serveDone.Add(1)
	go func() {
		defer s.serveDone.Done()
		if err := p.port.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("server stopped serving", "port", p.name, "error", err)
			if p.onFail != nil {
				// Shutdown waits for this goroutine.
				go p.onFail(err)
			}
		}
	}()
}

// fail shuts down a node whose RPC port cannot serve any more: holding its
// lease, it would keep documents no client can reach. Shutting down releases
// their bindings, so other nodes take them.
func (s *Server) fail(err error) {
	s.failOnce.Do(func() {
		s.failErr = fmt.Errorf("server: rpc port failed: %w", err)
		ctx, cancel := context.WithTimeout(context.Background(), failedShutdownTimeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			s.logger.Error("shut down after the rpc port failed", "error", err)
		}
		close(s.failed)
	})
}

// Failed is closed once the RPC port failed for good and the server shut
// down because of it; Err then says why.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Err returns why the server failed, after Failed is closed.
func (s *Server) Err() error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return nil
	}
}

// RPCAddr returns the host:port the RPC port is bound to.
func (s *Server) RPCAddr() string { return s.rpcAddr }

// ProfilingAddr returns the host:port of the profiling port ("" when it is
// disabled).
func (s *Server) ProfilingAddr() string { return s.profilingAddr }

// Registry returns the server's own Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Housekeeper returns the node's housekeeping, so tests can run it at a
// moment they choose.
func (s *Server) Housekeeper() *housekeeping.Housekeeper { return s.house }

// Backend returns the server's document logic, for tests and cluster wiring.
func (s *Server) Backend() *backend.Backend { return s.backend }

// Shutdown stops the server gracefully: it reports NOT_SERVING, ends Watch
// streams at once with code unavailable (so clients reconnect elsewhere or
// later), stops accepting connections, lets in-flight unary calls finish
// until ctx ends, then closes the backend and, if the server created it, the
// database. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.health.SetStatus(v1connect.YorkieServiceName, grpchealth.StatusNotServing)
	s.health.SetStatus("", grpchealth.StatusNotServing)
	var errs []error
	drained := s.drainOnShutdown(ctx)
	// Write the activity seen here and hand the housekeeping role over
	// while the node is still a member.
	if err := s.house.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	leave := func() {
		if err := s.cluster.leave(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if !drained {
		// Release the bindings first: by the time clients reconnect, their
		// documents can be bound to another node.
		leave()
	}
	s.service.CloseStreams()
	for _, p := range s.ports {
		if err := p.port.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down %s port: %w", p.name, err))
			_ = p.port.Close()
		}
		// A port never served still holds its listener.
		_ = p.ln.Close()
	}
	if drained {
		// Every document was handed on: the calls still in flight or
		// arriving on open connections were relayed to the new owners
		// while the ports closed, which needs the membership.
		leave()
	}
	s.serveDone.Wait()
	s.channels.Close()
	if err := s.backend.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("close backend: %w", err))
	}
	if err := s.webhooks.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.ownsDB {
		if err := s.db.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}
	if err := s.cluster.close(); err != nil {
		errs = append(errs, err)
	}
	s.logger.InfoContext(ctx, "server stopped")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// errAborted is what Shutdown returns after Abort.
var errAborted = errors.New("server: aborted")

// Abort stops the server at once, as a crash would, for tests of failures:
// connections drop without a goodbye, no binding is released, and the
// session store client is closed so that the node's lease runs out after
// its TTL; only then can other nodes take its documents. The server cannot
// be used afterwards.
func (s *Server) Abort() {
	s.shutdownOnce.Do(func() {
		s.shutdownErr = errAborted
		s.house.Abandon()
		s.cluster.abandon()
		for _, p := range s.ports {
			_ = p.port.Close()
			_ = p.ln.Close()
		}
		s.serveDone.Wait()
		s.channels.Close()
		_ = s.backend.Close(context.Background())
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.webhooks.close(canceled)
	})
}

// Channels returns the node's channel sessions.
func (s *Server) Channels() *channel.Manager { return s.channels }

// Affinity returns the node's affinity manager (nil when WithRouter
// replaces the cluster layer).
func (s *Server) Affinity() *affinity.Manager { return s.mgr }
