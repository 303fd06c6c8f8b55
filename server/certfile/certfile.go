// Package certfile serves a TLS certificate kept in files and picks up a
// new one when operators replace the files, without a restart: a handshake
// looks at the files at most once per check interval (a stat of each), and
// loads them again when they changed. A pair that does not load (the
// certificate written but not yet its key, say) leaves the previous one in
// service and is tried again once the files change again.
package certfile

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCheckInterval is how often, at most, handshakes look at the files.
const DefaultCheckInterval = time.Second

var (
	// ErrExpired: the certificate's validity ended.
	ErrExpired = errors.New("certificate expired")
	// ErrNotYetValid: the certificate's validity has not begun.
	ErrNotYetValid = errors.New("certificate not yet valid")
	// ErrNoCertificates: a CA file holds no PEM certificate.
	ErrNoCertificates = errors.New("no PEM certificate found")
)

// Config configures a Reloader.
type Config struct {
	// Name says what the certificate is for in logs and metric labels
	// ("rpc", "profiling"). Required.
	Name string
	// CertFile and KeyFile hold the PEM certificate chain and its private
	// key. Required.
	CertFile, KeyFile string
	// CheckInterval is how often, at most, a handshake looks at the files
	// (0: DefaultCheckInterval).
	CheckInterval time.Duration
	// Logger receives reloads and failed reloads; nil discards.
	Logger *slog.Logger
	// Registerer receives the reload counts and the expiry time; nil keeps
	// them unregistered.
	Registerer prometheus.Registerer
	// Now is the clock validity is checked against (nil: time.Now).
	Now func() time.Time
}

// Reloader hands out the certificate of a pair of files.
type Reloader struct {
	cfg     Config
	current atomic.Pointer[tls.Certificate]
	// checked is when the files were last looked at (Unix nanoseconds).
	checked atomic.Int64

	mu   sync.Mutex // one look at the files at a time
	seen [2]os.FileInfo

	reloads *prometheus.CounterVec
	expiry  prometheus.Gauge
}

// New loads the pair and returns a Reloader serving it. A missing file, a
// key that does not match, or a certificate outside its validity is an
// error naming the file.
func New(cfg Config) (*Reloader, error) {
	if cfg.Name == "" || cfg.CertFile == "" || cfg.KeyFile == "" {
		return nil, errors.New("certfile: Config needs Name, CertFile and KeyFile")
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = DefaultCheckInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Reloader{
		cfg: cfg,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "yorkie_tls_certificate_reloads_total",
			Help:        "Times changed certificate files were loaded again, by result (ok, failed).",
			ConstLabels: prometheus.Labels{"port": cfg.Name},
		}, []string{"result"}),
		expiry: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "yorkie_tls_certificate_expiry_timestamp_seconds",
			Help:        "When the certificate in service expires (Unix time).",
			ConstLabels: prometheus.Labels{"port": cfg.Name},
		}),
	}
	seen, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.seen = seen
	r.use(cert)
	r.checked.Store(cfg.Now().UnixNano())
	if cfg.Registerer != nil {
		if err := errors.Join(cfg.Registerer.Register(r.reloads), cfg.Registerer.Register(r.expiry)); err != nil {
			return nil, fmt.Errorf("certfile: register metrics: %w", err)
		}
	}
	return r, nil
}

// stat looks at both files.
func (r *Reloader) stat() ([2]os.FileInfo, error) {
	var out [2]os.FileInfo
	for i, name := range []string{r.cfg.CertFile, r.cfg.KeyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return out, fmt.Errorf("%s certificate: %w", r.cfg.Name, err)
		}
		out[i] = fi
	}
	return out, nil
}

// load reads and checks the pair.
func (r *Reloader) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(r.cfg.CertFile, r.cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s certificate %s with key %s: %w", r.cfg.Name, r.cfg.CertFile, r.cfg.KeyFile, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s certificate %s: %w", r.cfg.Name, r.cfg.CertFile, err)
		}
		cert.Leaf = leaf
	}
	now := r.cfg.Now()
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("%s certificate %s: %w at %s", r.cfg.Name, r.cfg.CertFile, ErrExpired, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("%s certificate %s: %w until %s", r.cfg.Name, r.cfg.CertFile, ErrNotYetValid, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return &cert, nil
}

func (r *Reloader) use(cert *tls.Certificate) {
	r.current.Store(cert)
	r.expiry.Set(float64(cert.Leaf.NotAfter.Unix()))
}

// Certificate returns the certificate in service, after looking at the
// files if the check interval has passed.
func (r *Reloader) Certificate() *tls.Certificate {
	now := r.cfg.Now()
	if now.UnixNano()-r.checked.Load() >= int64(r.cfg.CheckInterval) && r.mu.TryLock() {
		r.check(now)
		r.mu.Unlock()
	}
	return r.current.Load()
}

// check loads the files again if they changed since they were last loaded
// or tried. The caller holds mu.
func (r *Reloader) check(now time.Time) {
	r.checked.Store(now.UnixNano())
	seen, err := r.stat()
	if err != nil {
		// Mid-replacement, say: the next check looks again.
		r.cfg.Logger.Warn("cannot look at the certificate files", "port", r.cfg.Name, "error", err)
		return
	}
	if same(seen, r.seen) {
		return
	}
	r.seen = seen
	cert, err := r.load()
	if err != nil {
		r.reloads.WithLabelValues("failed").Inc()
		r.cfg.Logger.Error("changed certificate files do not load; the previous certificate stays in service",
			"port", r.cfg.Name, "error", err)
		return
	}
	r.use(cert)
	r.reloads.WithLabelValues("ok").Inc()
	r.cfg.Logger.Info("certificate reloaded", "port", r.cfg.Name, "subject", cert.Leaf.Subject.String(),
		"serial", cert.Leaf.SerialNumber.String(), "not_after", cert.Leaf.NotAfter)
}

// same reports whether both files are as they were.
func same(a, b [2]os.FileInfo) bool {
	for i := range a {
		if b[i] == nil || !os.SameFile(a[i], b[i]) || !a[i].ModTime().Equal(b[i].ModTime()) || a[i].Size() != b[i].Size() {
			return false
		}
	}
	return true
}

// ServerConfig returns a server TLS configuration serving the reloaded
// certificate and offering nextProtos by ALPN.
func (r *Reloader) ServerConfig(nextProtos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return r.Certificate(), nil
		},
	}
}

// LoadPool reads the PEM certificates of a CA file into a pool.
func LoadPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("CA file %s: %w", path, ErrNoCertificates)
	}
	return pool, nil
}
