// Command yorkie runs a Yorkie-compatible collaboration server, and is the
// admin CLI of upstream Yorkie's command tree: login, logout, signup,
// passwd, delete-account, context, project, document, history, version and
// completion, and "yorkie migrate upstream" (see "yorkie --help").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database/mongo"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc/limits"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// shutdownTimeout bounds how long in-flight calls may run after a signal.
const shutdownTimeout = 30 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// runServer parses the server flags, runs the server until a signal arrives,
// then shuts it down gracefully.
func runServer(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("yorkie server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := stringFlag(fs, []string{"config", "c"}, "", "YAML file of settings, laid out like upstream's config.sample.yml (flags given override it)")
	rpcPort := fs.Int("rpc-port", 8080, "port of the RPC server (Connect, gRPC, gRPC-web and /healthz)")
	rpcAddr := fs.String("rpc-addr", "", "address the RPC port listens on, and the profiling port unless --profiling-addr (default: every interface)")
	profilingPort := fs.Int("profiling-port", 8081, "port of /metrics and, with --pprof-enabled, /debug/pprof/ (negative disables)")
	profilingAddr := fs.String("profiling-addr", "", "address the profiling port listens on (default: --rpc-addr's)")
	pprofEnabled := fs.Bool("pprof-enabled", false, "serve /debug/pprof/ on the profiling port (unauthenticated: it shows the command line)")
	readHeaderTimeout := fs.Duration("rpc-read-header-timeout", server.DefaultReadHeaderTimeout, "time a client has to send a request head")
	idleTimeout := fs.Duration("rpc-idle-timeout", server.DefaultIdleTimeout, "time a keep-alive connection of the RPC port may wait for its next request; keep it above a load balancer's idle timeout")
	readBodyTimeout := fs.Duration("rpc-read-body-timeout", server.DefaultReadBodyTimeout, "time a client has to send a request body once its head is in")
	logLevel := stringFlag(fs, []string{"log-level", "l"}, "info", "log level: debug, info, warn, error, panic or fatal")
	fastHTTP1 := fs.Bool("rpc-fast-http1", true, "answer unary calls over HTTP/1.1 on the server's own loop and hold idle HTTP/1.1 Watch streams on their own connections; false: net/http serves every request")
	fastJSON := fs.Bool("rpc-fast-json", true, "read and write Connect JSON with the server's own codec; false: protojson, connect's default")
	maxRequestBytes := fs.Int("rpc-max-request-bytes", server.DefaultMaxRequestBytes, "largest request message accepted, in bytes")
	maxInflight := fs.Int64("rpc-max-inflight-request-bytes", server.DefaultMaxInflightRequestBytes, "bytes the requests being served may hold at once, read and decompressed; a request past it gets unavailable, which clients retry (at least twice --rpc-max-request-bytes; negative: no bound)")
	maxChanges := fs.Int("max-changes-per-pack", backend.DefaultMaxChangesPerPack, "most changes one pushed pack may hold")
	snapshotInterval := fs.Int("snapshot-interval", backend.DefaultSnapshotInterval, "changes between stored snapshots of a document; negative: none")
	snapshotThreshold := fs.Int("snapshot-threshold", backend.DefaultSnapshotThreshold, "changes a client must be behind to get a snapshot instead of changes; negative: never")
	maxDocSize := fs.Int("max-size-per-document", backend.DefaultMaxSizePerDocument, "largest document size in bytes, as the SDK counts it; negative: no bound")
	sizeHardFactor := fs.Int("document-size-hard-limit-factor", backend.DefaultSizeHardLimitFactor, "a push may take a document to this many times its size limit (the SDK refuses local edits past the limit itself); negative: no bound")
	docCacheBytes := fs.Int64("document-cache-bytes", backend.DefaultDocumentCacheBytes, "bound on the estimated Go heap of the documents kept built in memory")
	mongoURI := fs.String("mongo-connection-uri", "", "MongoDB connection URI; empty keeps everything in memory")
	mongoDatabase := stringFlag(fs, []string{"mongo-database", "mongo-yorkie-database"}, mongo.DefaultDatabase, "MongoDB database name")
	mongoTimeout := fs.Duration("mongo-connection-timeout", mongo.DefaultConnectTimeout, "time to connect to MongoDB at start, and the most a call waits for a reachable MongoDB server")
	storeKind := fs.String("session-store", "", "where document owners are recorded: memory (one process), etcd, redis or mongo (the --mongo-connection-uri database); default: mongo with --mongo-connection-uri, else memory")
	etcdEndpoints := fs.String("etcd-endpoints", "http://127.0.0.1:2379", "comma-separated etcd client URLs (with --session-store etcd)")
	redisAddr := fs.String("redis-addr", "127.0.0.1:6379", "Redis address (with --session-store redis)")
	redisCloseOnReadOnly := fs.Bool("redis-close-conn-on-readonly", true, "drop a Redis connection that answers READONLY, so a failover behind one address is followed")
	advertiseAddr := stringFlag(fs, []string{"advertise-addr", "backend-rpc-addr"}, "", "host:port other nodes and proxies reach this node at (default 127.0.0.1:<rpc-port>)")
	affinityMode := fs.String("affinity-mode", string(routing.Forward), "a call for a document another node owns is forwarded to it (forward) or refused naming it (redirect)")
	sessionKeyHeader := fs.String("session-key-header", routing.DefaultSessionKeyHeader, "response header carrying the owner's session key")
	nodeTTL := fs.Duration("node-ttl", 0, fmt.Sprintf("lease TTL of this node in the session store (default %v with etcd, redis or mongo, a minute with memory)", affinity.DefaultTTL))
	drainTimeout := fs.Duration("shutdown-drain-timeout", server.DefaultShutdownDrainTimeout, "on SIGTERM, time to hand this node's documents on to their next owners before the rest are released (a second SIGTERM ends it early); negative: no drain")
	clusterSecret := fs.String("cluster-secret", "", "secret of node-to-node calls (default: one the session store keeps for the cluster)")
	maxMetadata := fs.Int("max-client-metadata-bytes", limits.DefaultMaxMetadataBytes, "largest client metadata (keys and values) ActivateClient accepts; negative: no bound")
	maxStreams := fs.Int("max-watch-streams-per-client", limits.DefaultMaxWatchStreamsPerClient, "most Watch streams one client may hold open on one node; negative: no bound")
	maxAttachments := fs.Int("max-attachments-per-client", limits.DefaultMaxAttachmentsPerClient, "most documents one client may have attached; negative: no bound")
	deactivateThreshold := fs.Duration("client-deactivate-threshold", housekeeping.DefaultDeactivateThreshold, "housekeeping deactivates clients that made no call for longer than this")
	housekeepingInterval := fs.Duration("housekeeping-interval", housekeeping.DefaultInterval, "time between housekeeping runs")
	admin := adminFlags(fs)
	hooks := serverWebhookFlagSet(fs)
	compactionMinChanges := fs.Int("housekeeping-compaction-min-changes", housekeeping.DefaultCompactionMinChanges, "minimum number of changes to compact a document for housekeeping run (documents no client has attached)")
	candidatesLimit := fs.Int("housekeeping-candidates-limit", housekeeping.DefaultCandidatesLimit, "most clients one housekeeping run deactivates")
	channelTTL := fs.Duration("channel-session-ttl", channel.DefaultSessionTTL, "a channel session not refreshed (the SDK's heartbeat, every 30s) for longer is removed from its counts")
	channelPayload := fs.Int("channel-max-payload-bytes", channel.DefaultMaxPayloadBytes, "largest broadcast payload a channel relays")
	useDefaultProject := fs.Bool("backend-use-default-project", true, "serve calls without an x-api-key in the default project (false: refuse them, unauthenticated)")
	projectCacheTTL := durationFlag(fs, []string{"project-cache-ttl", "mongo-project-cache-ttl"}, project.DefaultCacheTTL, "how long a node reuses a project looked up by API key; an UpdateProject reaches every node within it")
	registerIgnoredUpstreamFlags(fs)
	registerRefusedFlags(fs)
	var tlsMetrics tlsMetricsFlags
	tlsMetrics.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := checkRefusedFlags(fs); err != nil {
		fmt.Fprintf(stderr, "yorkie server: %v\n", err)
		return 2
	}
	var configWarnings []string
	if *configFile != "" {
		w, err := applyConfigFile(fs, *configFile)
		if err != nil {
			fmt.Fprintf(stderr, "yorkie server: %v\n", err)
			return 2
		}
		configWarnings = w
	}
	host, err := rpcHost(*rpcAddr)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie server: %v\n", err)
		return 2
	}
	if *maxRequestBytes <= 0 {
		fmt.Fprintf(stderr, "yorkie server: --rpc-max-request-bytes must be positive\n")
		return 2
	}
	if *maxInflight == 0 || (*maxInflight > 0 && *maxInflight < 2*int64(*maxRequestBytes)) {
		fmt.Fprintf(stderr, "yorkie server: --rpc-max-inflight-request-bytes %d: want at least twice --rpc-max-request-bytes (%d), or negative for no bound\n",
			*maxInflight, 2*int64(*maxRequestBytes))
		return 2
	}
	if *deactivateThreshold <= 0 || *housekeepingInterval <= 0 || *candidatesLimit <= 0 {
		fmt.Fprintf(stderr, "yorkie server: --client-deactivate-threshold, --housekeeping-interval and --housekeeping-candidates-limit must be positive\n")
		return 2
	}
	if *channelTTL <= 0 || *channelPayload <= 0 {
		fmt.Fprintf(stderr, "yorkie server: --channel-session-ttl and --channel-max-payload-bytes must be positive\n")
		return 2
	}
	webhooks, err := hooks.config()
	if err != nil {
		fmt.Fprintf(stderr, "yorkie server: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "yorkie server: unexpected arguments %q\n", fs.Args())
		return 2
	}
	level, err := parseLogLevel(*logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "yorkie server: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, w := range configWarnings {
		logger.Warn("config file: " + w)
	}
	if self, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		applyContainerMemoryLimit(logger, "/sys/fs/cgroup", string(self))
	}
	for _, f := range ignoredFlagsGiven(fs) {
		logger.Info("upstream flag accepted with no effect", "flag", f[0], "why", f[1])
	}
	if *projectCacheTTL > time.Minute {
		// Upstream's 5m (10m in its config file) relies on a broadcast this
		// server does not make.
		logger.Warn("project cache TTL above a minute: an UpdateProject reaches the other nodes only when it expires",
			"project-cache-ttl", *projectCacheTTL)
	}

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-signals:
			stop()
		case <-ctx.Done():
		}
	}()
	cfg := server.Config{
		RPCConfig: server.RPCConfig{
			Host:                    host,
			RPCPort:                 *rpcPort,
			MaxRequestBytes:         *maxRequestBytes,
			MaxInflightRequestBytes: *maxInflight,
			ReadHeaderTimeout:       *readHeaderTimeout,
			ReadBodyTimeout:         *readBodyTimeout,
			IdleTimeout:             *idleTimeout,
			DisableFastHTTP1:        !*fastHTTP1,
			DisableFastJSON:         !*fastJSON,
			Limits: limits.Limits{
				MaxMetadataBytes:         *maxMetadata,
				MaxWatchStreamsPerClient: *maxStreams,
				MaxAttachmentsPerClient:  *maxAttachments,
			},
			AdminAllowedOrigins:   admin.origins(),
			DashboardDir:          admin.dashboardDir,
			DisableDefaultProject: !*useDefaultProject,
			ProjectCacheTTL:       *projectCacheTTL,
		},
		ProfilingConfig: server.ProfilingConfig{
			ProfilingPort: *profilingPort,
			ProfilingHost: *profilingAddr,
			PprofEnabled:  *pprofEnabled,
		},
		BackendConfig: server.BackendConfig{
			MaxChangesPerPack:      *maxChanges,
			SnapshotInterval:       *snapshotInterval,
			SnapshotThreshold:      *snapshotThreshold,
			MaxSizePerDocument:     *maxDocSize,
			DocumentCacheBytes:     *docCacheBytes,
			SizeHardLimitFactor:    *sizeHardFactor,
			ChannelSessionTTL:      *channelTTL,
			ChannelMaxPayloadBytes: *channelPayload,
		},
		HousekeepingConfig: server.HousekeepingConfig{
			ClientDeactivateThreshold:        *deactivateThreshold,
			HousekeepingInterval:             *housekeepingInterval,
			HousekeepingCandidatesLimit:      *candidatesLimit,
			HousekeepingCompactionMinChanges: *compactionMinChanges,
		},
		ClusterConfig: server.ClusterConfig{
			AdvertiseAddr:        *advertiseAddr,
			AffinityMode:         routing.Mode(*affinityMode),
			SessionKeyHeader:     *sessionKeyHeader,
			NodeTTL:              *nodeTTL,
			ShutdownDrainTimeout: *drainTimeout,
			ClusterSecret:        *clusterSecret,
		},
		Logger:   logger,
		Admin:    admin.settings(fs),
		Webhooks: webhooks,
	}
	tlsMetrics.apply(&cfg)
	node := *advertiseAddr
	if node == "" {
		hostname, _ := os.Hostname()
		node = fmt.Sprintf("%s:%d", hostname, *rpcPort)
	}
	store, releaseStore, err := openSessionStore(ctx, storeSettings{
		kind: *storeKind, etcdEndpoints: *etcdEndpoints, redisAddr: *redisAddr, keepOnReadOnly: !*redisCloseOnReadOnly,
		mongoURI: *mongoURI, mongoDatabase: *mongoDatabase, node: node,
	}, logger)
	if err != nil {
		logger.Error("cannot use the session store", "error", err)
		return 1
	}
	if releaseStore != nil {
		defer releaseStore()
	}
	if store != nil {
		defer func() { _ = store.Close() }()
		cfg.SessionStore = store
	}
	if *mongoURI != "" {
		db, err := mongo.Dial(ctx, mongo.Config{URI: *mongoURI, Database: *mongoDatabase, ConnectTimeout: *mongoTimeout, Logger: logger})
		if err != nil {
			logger.Error("cannot use the database", "error", err)
			return 1
		}
		defer func() { _ = db.Close(context.Background()) }()
		cfg.DB = db
	}
	if err := serve(ctx, logger, cfg, signals); err != nil {
		logger.Error("server failed", "error", err)
		return 1
	}
	return 0
}

// serve runs a server until ctx ends, then shuts it down: it hands its
// documents on for up to cfg.ShutdownDrainTimeout, unless another signal
// comes first, then shuts down within shutdownTimeout.
func serve(ctx context.Context, logger *slog.Logger, cfg server.Config, signals <-chan os.Signal) error {
	srv, err := server.New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("create server: %w", err)
	}
	if err := srv.Start(ctx); err != nil {
		// Release the ports and whatever New made.
		return errors.Join(fmt.Errorf("start server: %w", err), srv.Shutdown(context.WithoutCancel(ctx)))
	}
	logger.Info("yorkie server running", "version", version)
	select {
	case <-ctx.Done():
	case <-srv.Failed():
		// The server shut itself down, releasing its documents.
		return srv.Err()
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), max(cfg.ShutdownDrainTimeout, 0)+shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case <-signals:
			logger.Info("second signal: releasing the documents not handed on yet")
			srv.SkipDrain()
		case <-shutdownCtx.Done():
		}
	}()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
