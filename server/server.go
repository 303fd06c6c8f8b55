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
	"github.com/yorkie-affinity/yorkie/server/rpc/http1"
	"github.com/yorkie-affinity/yorkie/server/rpc/jsoncodec"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	sessmemory "github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxRequestBytes = rpc.DefaultMaxRequestBytes
	// DefaultMaxInflightRequestBytes bounds the request bytes the RPC port
	// holds at once, read and decompressed, over all requests.
	DefaultMaxInflightRequestBytes = rpc.DefaultMaxInflightBytes
	DefaultMaxChangesPerPack       = 1000
	// DefaultReadHeaderTimeout bounds the arrival of a request head, as
	// net/http's ReadHeaderTimeout does.
	DefaultReadHeaderTimeout = rpc.DefaultReadHeaderTimeout
	// DefaultReadBodyTimeout bounds the arrival of a request body.
	DefaultReadBodyTimeout = rpc.DefaultReadBodyTimeout
	// failedShutdownTimeout bounds the shutdown of a node whose RPC port
	// failed for good.
	failedShutdownTimeout = 30 * time.Second
	// soloNodeTTL is the lease of a node on a session store of its own.
	soloNodeTTL = time.Minute
	// fencedReleaseTimeout bounds releasing a binding the database fenced.
	fencedReleaseTimeout = 2 * time.Second
)

// DefaultIdleTimeout is how long a keep-alive connection may stay idle
// before the server closes it, upstream's --rpc-idle-timeout default.
const DefaultIdleTimeout = 2 * time.Minute

// Config configures a Server.
type Config struct {
	// Host is the address both ports listen on; "" listens on all interfaces.
	Host string
	// RPCPort serves the YorkieService and health checks; 0 picks a free port.
	RPCPort int
	// ProfilingPort serves /metrics, the document view (package docview) and,
	// with PprofEnabled, /debug/pprof/; 0 picks a free port and a negative
	// value disables the profiling server.
	ProfilingPort int
	// ProfilingHost is the address the profiling port listens on ("": Host).
	ProfilingHost string
	// PprofEnabled serves /debug/pprof/ on the profiling port. It is off by
	// default: profiles show the command line (secrets included) and cost
	// CPU, and the port has no authentication.
	PprofEnabled bool
	// MaxRequestBytes bounds a YorkieService request message after
	// decompression (0: DefaultMaxRequestBytes).
	MaxRequestBytes int
	// MaxInflightRequestBytes bounds the bytes the requests being served on
	// the RPC port hold at once, read and decompressed (0:
	// DefaultMaxInflightRequestBytes; negative: no bound). A request that
	// would pass it gets unavailable, which clients retry. A positive value
	// must be at least twice MaxRequestBytes: a compressed request of the
	// largest size holds its wire bytes and its inflated ones.
	MaxInflightRequestBytes int64
	// ReadHeaderTimeout bounds the arrival of a request head on the RPC
	// port (0: DefaultReadHeaderTimeout).
	ReadHeaderTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection of the RPC port may
	// wait for its next request (0: DefaultIdleTimeout). It should exceed
	// the idle timeout of a load balancer in front.
	IdleTimeout time.Duration
	// ReadBodyTimeout bounds the arrival of a request body on the RPC port
	// once its head is in (0: DefaultReadBodyTimeout).
	ReadBodyTimeout time.Duration
	// DisableFastHTTP1 serves the RPC port with net/http alone, without the
	// HTTP/1.1 loop of package http1 (whose metric then is not exported).
	DisableFastHTTP1 bool
	// DisableFastJSON reads and writes Connect JSON with connect's own
	// codec, protojson, instead of package jsoncodec.
	DisableFastJSON bool
	// MaxChangesPerPack bounds the changes of one pushed pack (0: default).
	MaxChangesPerPack int
	// SnapshotInterval, SnapshotThreshold, MaxSizePerDocument and
	// DocumentCacheBytes are the backend's document options (0: the
	// backend's defaults; negative interval, threshold or size: off).
	SnapshotInterval   int
	SnapshotThreshold  int
	MaxSizePerDocument int
	DocumentCacheBytes int64
	// SizeHardLimitFactor is how many times its size limit a push may take
	// a document to (0: backend.DefaultSizeHardLimitFactor; negative: no
	// bound). The SDK refuses local edits past the limit itself.
	SizeHardLimitFactor int
	// Logger receives the server's logs (nil: slog.Default()).
	Logger *slog.Logger
	// DB stores the server's data; nil gives the server its own in-memory
	// database, which it then closes on Shutdown. A DB passed in is left open.
	DB database.Database
	// AllowedOrigins lists the web origins browsers may call the RPC port
	// from (CORS); empty allows every origin.
	AllowedOrigins []string
	// AdminAllowedOrigins lists the web origins (besides the server's own)
	// browsers may call the AdminService and /auth/ from, with
	// credentials; empty: only the server's own origin.
	AdminAllowedOrigins []string
	// DashboardDir, when set, is a dashboard build served under
	// /dashboard/ on the RPC port.
	DashboardDir string

	// SessionStore records the cluster's members and which node owns each
	// document. Nodes sharing a store (and a database) form one cluster;
	// nil gives the server a memory store of its own, a cluster of one.
	SessionStore sessionstore.Store
	// AdvertiseAddr is the host:port other nodes and proxies reach this node
	// at; "" means 127.0.0.1 and the bound RPC port.
	AdvertiseAddr string
	// AffinityMode is what the node does with a call for a document another
	// node owns: Forward (the default) or Redirect.
	AffinityMode routing.Mode
	// SessionKeyHeader names the response header carrying the owner's
	// session key (default routing.DefaultSessionKeyHeader).
	SessionKeyHeader string
	// NodeTTL is the node's lease TTL (default affinity.DefaultTTL, or a
	// minute on a session store of its own, where no node could take over).
	NodeTTL time.Duration
	// ClusterSecret authenticates node-to-node calls; "" uses the secret the
	// session store holds for the cluster.
	ClusterSecret string

	// Limits bound what one client may hold: metadata bytes, Watch streams
	// and attached documents (zero fields: the rpc package's defaults).
	Limits rpc.Limits
	// ClientDeactivateThreshold is how long a client may stay silent before
	// housekeeping deactivates it (default 24h).
	ClientDeactivateThreshold time.Duration
	// HousekeepingInterval is the time between housekeeping runs, and the
	// most a client's recorded activity lags (default 30s).
	HousekeepingInterval time.Duration
	// HousekeepingCandidatesLimit bounds the clients one housekeeping run
	// deactivates (default 500).
	HousekeepingCandidatesLimit int
	// Clock replaces time.Now for housekeeping and the caches of projects,
	// so tests can move time on.
	Clock func() time.Time
	// HousekeepingCompactionMinChanges is how many changes a document's
	// log must hold for housekeeping to compact it, when no client has it
	// attached (0: housekeeping.DefaultCompactionMinChanges, 1000).
	HousekeepingCompactionMinChanges int
	// OnHousekeeping, when set, is told the outcome of every housekeeping
	// run on this node.
	OnHousekeeping func(housekeeping.Report)

	// DisableDefaultProject refuses YorkieService calls without an API key
	// (unauthenticated) instead of serving them in the default project.
	DisableDefaultProject bool
	// ProjectCacheTTL is how long a node reuses a project it looked up by
	// API key, and the default project's settings for internal calls (0:
	// project.DefaultCacheTTL): an UpdateProject reaches every node within
	// it, and the node that served it at once.
	ProjectCacheTTL time.Duration

	// Webhooks holds the server-wide settings of the projects' auth and
	// event webhooks: policies, the answer cache, private addresses.
	Webhooks WebhookConfig

	// Admin configures the AdminService: the token secret and duration,
	// the default admin account and the version it reports.
	Admin admin.Settings

	// ChannelSessionTTL is how long a channel session lives after its
	// attach or last heartbeat (0: channel.DefaultSessionTTL, 60s).
	ChannelSessionTTL time.Duration
	// ChannelMaxPayloadBytes bounds a broadcast payload (0:
	// channel.DefaultMaxPayloadBytes).
	ChannelMaxPayloadBytes int

	// RPCCertFile and RPCKeyFile, both set, serve the RPC port over TLS
	// (upstream's --rpc-cert-file and --rpc-key-file): HTTP/1.1 and HTTP/2
	// by ALPN, for Connect, gRPC and gRPC-web. The files are looked at
	// again (at most every CertCheckInterval) and a replaced certificate
	// serves new connections without a restart. Nodes then call each
	// other over TLS too, verified with ClusterCAFile.
	RPCCertFile, RPCKeyFile string
	// ClusterCAFile holds the CA certificates that verify other nodes' RPC
	// ports ("": the system's roots). It needs RPCCertFile.
	ClusterCAFile string
	// ProfilingCertFile and ProfilingKeyFile, both set, serve the profiling
	// port over TLS, reloaded as the RPC port's are.
	ProfilingCertFile, ProfilingKeyFile string
	// CertCheckInterval is how often, at most, handshakes look at the
	// certificate files (0: certfile.DefaultCheckInterval).
	CertCheckInterval time.Duration

	// Hostname is the hostname label of upstream's metric series
	// (upstream's --hostname).
	Hostname string

	// Router replaces the cluster layer, for tests that stage routing
	// decisions themselves (say, two nodes that both believe they own a
	// document, each with its own epoch in the routes it returns). With it
	// set the node joins no cluster.
	Router rpc.Router
}

// Server is one Yorkie server node.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	registry *prometheus.Registry
	db       database.Database
	ownsDB   bool
	backend  *backend.Backend
	channels *channel.Manager
	service  *rpc.Service
	health   *grpchealth.StaticChecker
	// draining is set when shutdown begins: /healthz then answers 503.
	draining atomic.Bool
	// router routes in a cluster; nil when Config.Router replaces it.
	router   *routing.Router
	peers    *routing.Peers
	tracker  *housekeeping.Tracker
	projects *project.Resolver
	store    sessionstore.Store
	ownStore bool
	mgr      *affinity.Manager
	house    *housekeeping.Housekeeper
	admin    *admin.Service
	webhooks *webhooks
	upstream *metrics.Metrics

	rpcServer       *http.Server
	rpcPort         port // serves the RPC port: rpcServer, or http1 in front of it
	profilingServer *http.Server

	// rpcCerts and profilingCerts serve the ports' certificates (nil in
	// cleartext); peerTLS is how this node calls others (nil: cleartext).
	rpcCerts, profilingCerts *certfile.Reloader
	peerTLS                  *tls.Config

	// listen opens the ports (tests replace it to make listeners fail).
	listen func(ctx context.Context, network, addr string) (net.Listener, error)
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
}

// New builds a server from cfg; Start makes it listen.
func New(cfg Config) (*Server, error) {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxInflightRequestBytes == 0 {
		cfg.MaxInflightRequestBytes = DefaultMaxInflightRequestBytes
	}
	if cfg.MaxInflightRequestBytes > 0 && cfg.MaxInflightRequestBytes < 2*int64(cfg.MaxRequestBytes) {
		return nil, fmt.Errorf("server: in-flight request bytes %d below twice the largest request (%d bytes)",
			cfg.MaxInflightRequestBytes, cfg.MaxRequestBytes)
	}
	if cfg.MaxChangesPerPack <= 0 {
		cfg.MaxChangesPerPack = DefaultMaxChangesPerPack
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.ReadBodyTimeout <= 0 {
		cfg.ReadBodyTimeout = DefaultReadBodyTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var lc net.ListenConfig
	s := &Server{
		cfg: cfg, logger: logger, registry: prometheus.NewRegistry(), db: cfg.DB,
		listen: lc.Listen, failed: make(chan struct{}),
	}
	if s.db == nil {
		s.db = memory.New()
		s.ownsDB = true
	}
	if err := s.loadTLS(); err != nil {
		return nil, err
	}
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
	var err error
	if s.upstream, err = metrics.New(metrics.Config{
		Registerer: s.registry,
		Hostname:   cfg.Hostname,
		Version:    cfg.Admin.Version,
		Channels:   s.channelSessions,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	backendMetrics.AnswerSnapshotSeconds = s.upstream.SnapshotSeconds()
	backendMetrics.SnapshotRuns = s.upstream.Background("snapshot")
	if s.projects, err = project.NewResolver(project.ResolverConfig{
		DB:                s.db,
		UseDefaultProject: !cfg.DisableDefaultProject,
		CacheTTL:          cfg.ProjectCacheTTL,
		Now:               cfg.Clock,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if s.webhooks, err = newWebhooks(cfg.Webhooks, s.projects, logger, s.registry); err != nil {
		return nil, err
	}
	bcfg := backend.Config{
		OnRootChanged:      s.webhooks.rootChanged,
		DB:                 s.db,
		MaxChangesPerPack:  cfg.MaxChangesPerPack,
		Logger:             logger,
		Metrics:            backendMetrics,
		SnapshotInterval:   cfg.SnapshotInterval,
		SnapshotThreshold:  cfg.SnapshotThreshold,
		MaxSizePerDocument: cfg.MaxSizePerDocument,
		DocumentCacheBytes: cfg.DocumentCacheBytes,
		Projects:           s.projects,
	}
	bcfg.SizeHardLimitFactor = cfg.SizeHardLimitFactor
	if s.clustered() {
		if err := s.checkCluster(); err != nil {
			return nil, err
		}
		bcfg.OnFenced = func(_ string, name backend.DocName) {
			if mgr := s.Affinity(); mgr != nil {
				ctx, cancel := context.WithTimeout(context.Background(), fencedReleaseTimeout)
				defer cancel()
				mgr.Fenced(ctx, project.ScopedKey(name.Project, name.Key))
			}
		}
	}
	b, err := backend.New(bcfg)
	if err != nil {
		return nil, fmt.Errorf("server: create backend: %w", err)
	}
	s.backend = b
	channelMetrics, err := channel.NewMetrics(s.registry)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.tracker = housekeeping.NewTracker()
	s.channels = channel.New(channel.Config{
		SessionTTL:      cfg.ChannelSessionTTL,
		MaxPayloadBytes: cfg.ChannelMaxPayloadBytes,
		Logger:          logger,
		Metrics:         channelMetrics,
	})
	s.health = grpchealth.NewStaticChecker(v1connect.YorkieServiceName)

	if s.admin, err = admin.New(admin.Config{
		Settings: cfg.Admin, DB: s.db, Logger: logger, Registerer: s.registry,
		Interceptors:                     []connect.Interceptor{s.upstream.Interceptor(false)},
		DefaultClientDeactivateThreshold: cfg.ClientDeactivateThreshold,
		OnProjectUpdated: func(p *database.ProjectInfo) {
			s.projects.Updated(p)
		},
		Compactor: compactor{s},
		Owners:    adminOwners{s},
		Revisions: revisionRestorer{s},
	}); err != nil {
		s.channels.Close()
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.ProfilingPort >= 0 {
		if err := s.newProfilingServer(); err != nil {
			s.channels.Close()
			return nil, err
		}
	}
	return s, nil
}

// channelSessions lists the channel sessions of this node for the metrics
// (none before the channel manager exists).
func (s *Server) channelSessions() []channel.KeySessions {
	if s.channels == nil {
		return nil
	}
	return s.channels.Sessions()
}

// clustered reports whether the node joins a cluster: it does unless a test
// stages routing with Config.Router.
func (s *Server) clustered() bool { return s.cfg.Router == nil }

// newRPC builds what serves the RPC port once routing exists: the
// YorkieService, in a cluster the node-to-node service, and housekeeping.
func (s *Server) newRPC(router rpc.Router) error {
	cfg, logger := s.cfg, s.logger
	svc, err := rpc.New(rpc.Config{
		Backend:         s.backend,
		Logger:          logger,
		Registerer:      s.registry,
		MaxRequestBytes: cfg.MaxRequestBytes,
		Router:          router,
		Limits:          cfg.Limits,
		Activity:        s.tracker,
		Channels:        s.channels,
		Codecs:          jsonCodecs(cfg.DisableFastJSON),
		Projects:        s.projects,
		Auth:            s.webhooks.rpcAuth(s.forwarded()),
		Upstream:        s.upstream,
	})
	if err != nil {
		return fmt.Errorf("server: create rpc service: %w", err)
	}
	s.service = svc
	if err := s.newHousekeeper(svc); err != nil {
		return err
	}

	mux := http.NewServeMux()
	path, yorkieHandler := svc.Handler()
	mux.Handle(path, yorkieHandler)
	// The AdminService's requests keep the small default bound.
	mux.Handle(s.admin.Handler())
	mux.Handle(s.admin.SessionHandler())
	if cfg.DashboardDir != "" {
		dash, err := dashboardHandler(cfg.DashboardDir)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		mux.Handle(dashboardPrefix, dash)
		mux.Handle("GET /dashboard", dash)
	}
	// Every body is bounded, after decompression, before any handler runs.
	bounds := rpc.Bounds{
		Rules:            []rpc.BoundRule{{Prefix: path, MaxBytes: cfg.MaxRequestBytes}},
		ReadBodyTimeout:  cfg.ReadBodyTimeout,
		MaxInflightBytes: cfg.MaxInflightRequestBytes,
	}
	if s.router != nil {
		csvc, err := rpc.NewCluster(rpc.ClusterConfig{
			Backend: s.backend, Router: s.router, Authentic: s.router.Authentic, Logger: logger, FindProject: s.db.FindProjectByID,
			Service: svc, Upstream: s.upstream,
		})
		if err != nil {
			return fmt.Errorf("server: create cluster service: %w", err)
		}
		mux.Handle(csvc.Handler())
		bounds.Rules = append(bounds.Rules, csvc.Bound())
	}
	mux.Handle(grpchealth.NewHandler(s.health, connect.WithReadMaxBytes(rpc.DefaultSmallRequestBytes)))
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
	bounded := rpc.BoundRequests(mux, bounds)
	s.rpcServer = newHTTPServer(withAdminCORS(withCORS(bounded, cfg.AllowedOrigins, s.exposedHeaders()), bounded, cfg.AdminAllowedOrigins),
		logger, cfg.ReadHeaderTimeout)
	if cfg.IdleTimeout > 0 {
		s.rpcServer.IdleTimeout = cfg.IdleTimeout
	}
	s.rpcPort = s.rpcServer
	s.serveRPCOverTLS()
	if s.rpcServer.TLSConfig != nil {
		s.rpcPort = tlsPort{s.rpcServer}
	}
	if !cfg.DisableFastHTTP1 {
		fast, err := http1.New(http1.Config{
			Fallback:        s.rpcServer,
			Paths:           rpc.UnaryPaths(),
			Logger:          logger,
			MaxRequestBytes: cfg.MaxRequestBytes,
			ReadBodyTimeout: cfg.ReadBodyTimeout,
			Registerer:      s.registry,
			TLS:             s.rpcServer.TLSConfig,
		})
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		s.rpcPort = fast
	}
	return nil
}

// newProfilingServer builds the operators' port.
func (s *Server) newProfilingServer() error {
	cfg, logger := s.cfg, s.logger
	pmux := http.NewServeMux()
	pmux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}))
	// Operators' read-only views, on the operators' port only: they name
	// documents by key and show their content.
	views, err := docview.New(docview.Config{Source: s.admin, Logger: logger, Registerer: s.registry})
	if err != nil {
		return fmt.Errorf("server: create document view: %w", err)
	}
	views.Register(pmux)
	if cfg.PprofEnabled {
		pmux.HandleFunc("/debug/pprof/", pprof.Index)
		pmux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		pmux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		pmux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		pmux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.profilingServer = newHTTPServer(rpc.BoundRequests(pmux, rpc.Bounds{ReadBodyTimeout: cfg.ReadBodyTimeout}),
		logger, cfg.ReadHeaderTimeout)
	if s.profilingCerts != nil {
		s.profilingServer.TLSConfig = s.profilingCerts.ServerConfig("http/1.1")
	}
	return nil
}

// newHousekeeper builds the node's housekeeping: it deactivates clients as
// DeactivateClient does, detaching at the owners first, and in a cluster
// scans only while this node holds the housekeeping role.
func (s *Server) newHousekeeper(svc *rpc.Service) error {
	var role housekeeping.Role
	if s.mgr != nil {
		role = s.mgr
	}
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
			return svc.Deactivate(project.NewContext(ctx, p), c.ID)
		},
		Role:       role,
		Now:        s.cfg.Clock,
		Logger:     s.logger,
		Registerer: s.registry,
		OnRun:      s.cfg.OnHousekeeping,
		Compaction: &housekeeping.Compaction{
			MinChanges: s.cfg.HousekeepingCompactionMinChanges,
			Documents:  s.db,
			Compact:    s.compactIdle,
		},
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.house = h
	return nil
}

// exposedHeaders lists the response headers a browser page may read: the
// owner's session key, which the redirect wrapper sends back.
func (s *Server) exposedHeaders() []string {
	if !s.clustered() {
		return nil
	}
	return []string{s.cfg.SessionKeyHeader}
}

// checkCluster validates the cluster settings and picks the session store;
// Start joins the cluster once the RPC port is bound.
func (s *Server) checkCluster() error {
	cfg := &s.cfg
	switch cfg.AffinityMode {
	case "":
		cfg.AffinityMode = routing.Forward
	case routing.Forward, routing.Redirect:
	default:
		return fmt.Errorf("server: affinity mode %q: want %q or %q", cfg.AffinityMode, routing.Forward, routing.Redirect)
	}
	if cfg.SessionKeyHeader == "" {
		cfg.SessionKeyHeader = routing.DefaultSessionKeyHeader
	}
	if cfg.AdvertiseAddr != "" {
		if _, err := affinity.ParseSessionKey(affinity.SessionKey(cfg.AdvertiseAddr)); err != nil {
			return fmt.Errorf("server: advertise address: %w", err)
		}
	}
	s.store = cfg.SessionStore
	if s.store == nil {
		s.store = sessmemory.New(sessmemory.Config{Logger: s.logger})
		s.ownStore = true
		if cfg.NodeTTL == 0 {
			// No other node shares this store, so none could take over: a short
			// lease would only let a CPU-starved process drop its own documents.
			cfg.NodeTTL = soloNodeTTL
		}
	}
	return nil
}

// joinCluster registers the node in the session store under its advertised
// address and builds the router on the membership it joined.
func (s *Server) joinCluster(ctx context.Context, rpcAddr string) error {
	advertise := s.cfg.AdvertiseAddr
	if advertise == "" {
		_, port, err := net.SplitHostPort(rpcAddr)
		if err != nil {
			return fmt.Errorf("server: bound address %q: %w", rpcAddr, err)
		}
		advertise = net.JoinHostPort("127.0.0.1", port)
	}
	secret := s.cfg.ClusterSecret
	if secret == "" {
		var err error
		if secret, err = s.store.ClusterSecret(ctx); err != nil {
			return fmt.Errorf("server: cluster secret: %w", err)
		}
	}
	mgr, err := affinity.New(affinity.Config{
		Store:         s.store,
		AdvertiseAddr: advertise,
		TTL:           s.cfg.NodeTTL,
		// Crashed peers are found by heartbeats and refused relays, not
		// only when their leases run out (affinity/suspect.go).
		HeartbeatInterval: affinity.HeartbeatFor(s.cfg.NodeTTL),
		OnLost:            routing.Lost(s.backend, s.channels, 0, s.logger),
		Logger:            s.logger,
		Registerer:        s.registry,
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("server: join cluster: %w", err)
	}
	peers := routing.NewPeers(routing.PeersConfig{Secret: secret, Self: advertise, TLS: s.peerTLS})
	router, err := routing.New(routing.Config{
		Owners:     mgr,
		Peers:      peers,
		Backend:    s.backend,
		Channels:   s.channels,
		Mode:       s.cfg.AffinityMode,
		Header:     s.cfg.SessionKeyHeader,
		Secret:     secret,
		Logger:     s.logger,
		Registerer: s.registry,
	})
	if err != nil {
		peers.Close()
		return errors.Join(fmt.Errorf("server: %w", err), mgr.Stop(ctx))
	}
	s.mgr, s.router, s.peers = mgr, router, peers
	return nil
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
	return &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
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
		counter("conflicts_total", "Appends that lost a server_seq race and were retried.", m.Conflicts.Load),
		counter("changes_refused_total", "Pushed changes refused: they do not apply or would exceed the document size limit.", m.ChangesRefused.Load),
		counter("documents_built_total", "Documents built from a snapshot and the change log.", m.DocumentsBuilt.Load),
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

// Start listens on the configured ports and serves in the background. It
// returns once both ports accept connections.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server: already started")
	}
	rpcLn, err := s.listen(ctx, "tcp", net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.RPCPort)))
	if err != nil {
		return fmt.Errorf("server: listen rpc port: %w", err)
	}
	var profLn net.Listener
	if s.profilingServer != nil {
		profHost := s.cfg.ProfilingHost
		if profHost == "" {
			profHost = s.cfg.Host
		}
		profLn, err = s.listen(ctx, "tcp", net.JoinHostPort(profHost, strconv.Itoa(s.cfg.ProfilingPort)))
		if err != nil {
			_ = rpcLn.Close()
			return fmt.Errorf("server: listen profiling port: %w", err)
		}
		s.profilingAddr = profLn.Addr().String()
		serveProfiling := s.profilingServer.Serve
		if s.profilingServer.TLSConfig != nil {
			serveProfiling = tlsPort{s.profilingServer}.Serve
		}
		s.serve(serveProfiling, profLn, "profiling", nil)
	}
	s.rpcAddr = rpcLn.Addr().String()
	if err := s.admin.Start(ctx); err != nil {
		_ = rpcLn.Close()
		if profLn != nil {
			_ = s.profilingServer.Close()
		}
		return fmt.Errorf("server: %w", err)
	}
	closePorts := func() {
		_ = rpcLn.Close()
		if profLn != nil {
			_ = s.profilingServer.Close()
		}
	}
	router := s.cfg.Router
	if s.clustered() {
		if err := s.joinCluster(ctx, s.rpcAddr); err != nil {
			closePorts()
			return err
		}
		router = s.router
	}
	if err := s.newRPC(router); err != nil {
		closePorts()
		if s.mgr != nil {
			err = errors.Join(err, s.mgr.Stop(ctx))
		}
		return err
	}
	s.serve(s.rpcPort.Serve, rpcLn, "rpc", s.fail)
	s.house.Start()
	s.started = true
	s.logger.InfoContext(ctx, "server started", "rpc_addr", s.rpcAddr, "profiling_addr", s.profilingAddr)
	return nil
}

// serve runs a server's Serve on ln until it is shut down; onFail, if set,
// learns that it stopped for another reason.
func (s *Server) serve(serve func(net.Listener) error, ln net.Listener, name string, onFail func(error)) {
	s.serveDone.Add(1)
	go func() {
		defer s.serveDone.Done()
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("server stopped serving", "port", name, "error", err)
			if onFail != nil {
				// Shutdown waits for this goroutine.
				go onFail(err)
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

// RPCAddr returns the host:port the RPC port is bound to ("" before Start).
func (s *Server) RPCAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rpcAddr
}

// ProfilingAddr returns the host:port of the profiling port ("" before Start
// or when it is disabled).
func (s *Server) ProfilingAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.profilingAddr
}

// Registry returns the server's own Prometheus registry.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Housekeeper returns the node's housekeeping (nil before Start), so tests
// can run it at a moment they choose.
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
	// Write the activity seen here and hand the housekeeping role over
	// while the node is still a member.
	if s.house != nil {
		if err := s.house.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if s.mgr != nil {
		// Release the bindings first: by the time clients reconnect, their
		// documents can be bound to another node.
		if err := s.mgr.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leave cluster: %w", err))
		}
	}
	if s.service != nil { // nil before Start
		s.service.CloseStreams()
		if err := s.rpcPort.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down rpc port: %w", err))
			_ = s.rpcPort.Close()
		}
	}
	if s.profilingServer != nil {
		if err := s.profilingServer.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shut down profiling port: %w", err))
			_ = s.profilingServer.Close()
		}
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
	s.closeCluster(&errs)
	s.logger.InfoContext(ctx, "server stopped")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// closeCluster closes the peer connections and the session store if the
// server made it.
func (s *Server) closeCluster(errs *[]error) {
	if s.peers != nil {
		s.peers.Close()
	}
	if s.ownStore {
		if err := s.store.Close(); err != nil {
			*errs = append(*errs, fmt.Errorf("close session store: %w", err))
		}
	}
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
		if s.house != nil {
			s.house.Abandon()
		}
		if s.mgr != nil {
			s.mgr.Abandon()
		}
		if s.rpcPort != nil {
			_ = s.rpcPort.Close()
		}
		if s.profilingServer != nil {
			_ = s.profilingServer.Close()
		}
		s.serveDone.Wait()
		s.channels.Close()
		if s.store != nil {
			_ = s.store.Close()
		}
		_ = s.backend.Close(context.Background())
		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.webhooks.close(canceled)
		if s.peers != nil {
			s.peers.Close()
		}
	})
}

// Affinity returns the node's affinity manager (nil before Start or when
// Config.Router replaces the cluster layer).
func (s *Server) Affinity() *affinity.Manager {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mgr
}

// forwarded tells the calls another node forwarded with the cluster secret;
// nil when a test stages routing itself (no call is forwarded then). It is
// asked for once the node has joined its cluster.
func (s *Server) forwarded() func(http.Header) bool {
	if s.router == nil {
		return nil
	}
	r := s.router
	return func(h http.Header) bool { return forwardedBy(h, r.Authentic) }
}
