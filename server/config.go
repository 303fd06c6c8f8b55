package server

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/rpc"
	"github.com/yorkie-affinity/yorkie/server/rpc/bounds"
	"github.com/yorkie-affinity/yorkie/server/rpc/limits"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultMaxRequestBytes = rpc.DefaultMaxRequestBytes
	// DefaultMaxInflightRequestBytes bounds the request bytes the RPC port
	// holds at once, read and decompressed, over all requests.
	DefaultMaxInflightRequestBytes = bounds.DefaultMaxInflightBytes
	// DefaultReadHeaderTimeout bounds the arrival of a request head, as
	// net/http's ReadHeaderTimeout does.
	DefaultReadHeaderTimeout = bounds.DefaultReadHeaderTimeout
	// DefaultReadBodyTimeout bounds the arrival of a request body.
	DefaultReadBodyTimeout = bounds.DefaultReadBodyTimeout
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

// Config configures a Server, in the groups operators read it in (the
// config file's sections): each group's fields are promoted, so
// cfg.MaxRequestBytes is cfg.RPCConfig.MaxRequestBytes.
type Config struct {
	RPCConfig
	ProfilingConfig
	BackendConfig
	HousekeepingConfig
	ClusterConfig
	// Logger receives the server's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Webhooks holds the server-wide settings of the projects' auth and
	// event webhooks: policies, the answer cache, private addresses.
	Webhooks WebhookConfig
	// Admin configures the AdminService: the token secret and duration,
	// the default admin account and the version it reports.
	Admin admin.Settings
}

// RPCConfig is the RPC port: where it listens, what requests it takes and
// how long it waits for them, CORS, TLS, the dashboard, per-client limits
// and how calls find their project.
type RPCConfig struct {
	// Host is the address both ports listen on; "" listens on all interfaces.
	Host string
	// RPCPort serves the YorkieService and health checks; 0 picks a free port.
	RPCPort int
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
	// Limits bound what one client may hold: metadata bytes, Watch streams
	// and attached documents (zero fields: the rpc package's defaults).
	Limits limits.Limits
	// DisableDefaultProject refuses YorkieService calls without an API key
	// (unauthenticated) instead of serving them in the default project.
	DisableDefaultProject bool
	// ProjectCacheTTL is how long a node reuses a project it looked up by
	// API key, and the default project's settings for internal calls (0:
	// project.DefaultCacheTTL): an UpdateProject reaches every node within
	// it, and the node that served it at once.
	ProjectCacheTTL time.Duration
	// RPCCertFile and RPCKeyFile, both set, serve the RPC port over TLS
	// (upstream's --rpc-cert-file and --rpc-key-file): HTTP/1.1 and HTTP/2
	// by ALPN, for Connect, gRPC and gRPC-web. The files are looked at
	// again (at most every CertCheckInterval) and a replaced certificate
	// serves new connections without a restart. Nodes then call each
	// other over TLS too, verified with ClusterCAFile.
	RPCCertFile, RPCKeyFile string
	// CertCheckInterval is how often, at most, handshakes look at the
	// certificate files (0: certfile.DefaultCheckInterval).
	CertCheckInterval time.Duration
}

// ProfilingConfig is the operators' port: metrics, the document view and
// pprof.
type ProfilingConfig struct {
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
	// ProfilingCertFile and ProfilingKeyFile, both set, serve the profiling
	// port over TLS, reloaded as the RPC port's are.
	ProfilingCertFile, ProfilingKeyFile string
	// Hostname is the hostname label of upstream's metric series
	// (upstream's --hostname).
	Hostname string
}

// BackendConfig is the document logic: the database, packs, snapshots, the
// documents held in memory and channels.
type BackendConfig struct {
	// DB stores the server's data; nil gives the server its own in-memory
	// database, which it then closes on Shutdown. A DB passed in is left open.
	DB database.Database
	// MaxChangesPerPack bounds the changes of one pushed pack (0:
	// backend.DefaultMaxChangesPerPack).
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
	// ChannelSessionTTL is how long a channel session lives after its
	// attach or last heartbeat (0: channel.DefaultSessionTTL, 60s).
	ChannelSessionTTL time.Duration
	// ChannelMaxPayloadBytes bounds a broadcast payload (0:
	// channel.DefaultMaxPayloadBytes).
	ChannelMaxPayloadBytes int
}

// HousekeepingConfig is the background work: deactivating silent clients
// and compacting long logs.
type HousekeepingConfig struct {
	// ClientDeactivateThreshold is how long a client may stay silent before
	// housekeeping deactivates it (default 24h).
	ClientDeactivateThreshold time.Duration
	// HousekeepingInterval is the time between housekeeping runs, and the
	// most a client's recorded activity lags (default 30s).
	HousekeepingInterval time.Duration
	// HousekeepingCandidatesLimit bounds the clients one housekeeping run
	// deactivates (default 500).
	HousekeepingCandidatesLimit int
	// HousekeepingCompactionMinChanges is how many changes a document's
	// log must hold for housekeeping to compact it, when no client has it
	// attached (0: housekeeping.DefaultCompactionMinChanges, 1000).
	HousekeepingCompactionMinChanges int
}

// ClusterConfig is the node's cluster: the session store, how other nodes
// and proxies reach it, what it does with another node's document, and
// how nodes trust each other.
type ClusterConfig struct {
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
	// ShutdownDrainTimeout bounds the drain that starts a shutdown: the node
	// hands its documents on to their next owners (see drain.go) for at most
	// this long, then releases what is left as a plain shutdown does
	// (default DefaultShutdownDrainTimeout; negative: no drain).
	ShutdownDrainTimeout time.Duration
	// ClusterSecret authenticates node-to-node calls; "" uses the secret the
	// session store holds for the cluster.
	ClusterSecret string
	// ClusterCAFile holds the CA certificates that verify other nodes' RPC
	// ports ("": the system's roots). It needs RPCCertFile.
	ClusterCAFile string
}

// applyDefaults fills the zero fields that have a default here; the other
// groups' parts (backend, housekeeping, webhooks) default their own.
func (c *Config) applyDefaults() {
	c.RPCConfig.applyDefaults()
	c.ClusterConfig.applyDefaults()
}

// Validate reports the first setting that cannot work, after defaults. The
// backend's and housekeeping's settings are checked by their constructors.
func (c *Config) Validate() error {
	if err := c.RPCConfig.Validate(); err != nil {
		return err
	}
	if err := c.ProfilingConfig.Validate(); err != nil {
		return err
	}
	return c.ClusterConfig.Validate()
}

func (c *RPCConfig) applyDefaults() {
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxInflightRequestBytes == 0 {
		c.MaxInflightRequestBytes = DefaultMaxInflightRequestBytes
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadBodyTimeout <= 0 {
		c.ReadBodyTimeout = DefaultReadBodyTimeout
	}
}

// Validate reports an RPC setting that cannot work.
func (c *RPCConfig) Validate() error {
	if c.MaxInflightRequestBytes > 0 && c.MaxInflightRequestBytes < 2*int64(c.MaxRequestBytes) {
		return fmt.Errorf("server: in-flight request bytes %d below twice the largest request (%d bytes)",
			c.MaxInflightRequestBytes, c.MaxRequestBytes)
	}
	return certPair("--rpc-cert-file", "--rpc-key-file", c.RPCCertFile, c.RPCKeyFile)
}

// Validate reports a profiling setting that cannot work.
func (c *ProfilingConfig) Validate() error {
	return certPair("--profiling-cert-file", "--profiling-key-file", c.ProfilingCertFile, c.ProfilingKeyFile)
}

// certPair fails unless a port's certificate and key files are named
// together or not at all.
func certPair(certFlag, keyFlag, certFile, keyFile string) error {
	if (certFile == "") != (keyFile == "") {
		return fmt.Errorf("server: %w: %s and %s go together", ErrTLSConfig, certFlag, keyFlag)
	}
	return nil
}

func (c *ClusterConfig) applyDefaults() {
	if c.AffinityMode == "" {
		c.AffinityMode = routing.Forward
	}
	if c.SessionKeyHeader == "" {
		c.SessionKeyHeader = routing.DefaultSessionKeyHeader
	}
	if c.ShutdownDrainTimeout == 0 {
		c.ShutdownDrainTimeout = DefaultShutdownDrainTimeout
	}
}

// Validate reports a cluster setting that cannot work.
func (c *ClusterConfig) Validate() error {
	switch c.AffinityMode {
	case "", routing.Forward, routing.Redirect:
	default:
		return fmt.Errorf("server: affinity mode %q: want %q or %q", c.AffinityMode, routing.Forward, routing.Redirect)
	}
	if c.AdvertiseAddr != "" {
		if _, err := affinity.ParseSessionKey(affinity.SessionKey(c.AdvertiseAddr)); err != nil {
			return fmt.Errorf("server: advertise address: %w", err)
		}
	}
	return nil
}
