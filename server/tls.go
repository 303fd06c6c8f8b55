package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/yorkie-affinity/yorkie/server/certfile"
)

// ALPN protocols the RPC port offers over TLS: HTTP/2 for gRPC and
// clients that prefer it, HTTP/1.1 for browsers and the JS SDK on Node.
var rpcNextProtos = []string{"h2", "http/1.1"}

// ErrTLSConfig: the TLS settings do not go together.
var ErrTLSConfig = errors.New("TLS settings")

// loadTLS loads the certificates Config names: the RPC port's, the
// profiling port's and the CA that verifies other nodes.
func (s *Server) loadTLS() error {
	cfg := s.cfg
	var err error
	if s.rpcCerts, err = loadPair("rpc", cfg.RPCCertFile, cfg.RPCKeyFile, s); err != nil {
		return err
	}
	if s.profilingCerts, err = loadPair("profiling", cfg.ProfilingCertFile, cfg.ProfilingKeyFile, s); err != nil {
		return err
	}
	if cfg.ClusterCAFile != "" {
		if s.rpcCerts == nil {
			return fmt.Errorf("server: %w: --cluster-ca-file verifies the certificates of other nodes' RPC ports, which are served over TLS only with --rpc-cert-file and --rpc-key-file", ErrTLSConfig)
		}
		pool, err := certfile.LoadPool(cfg.ClusterCAFile)
		if err != nil {
			return fmt.Errorf("server: --cluster-ca-file: %w", err)
		}
		s.peerTLS = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	} else if s.rpcCerts != nil {
		// The system's roots verify the other nodes.
		s.peerTLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return nil
}

// loadPair loads one port's certificate, or nothing when neither file is
// named.
func loadPair(name, certFile, keyFile string, s *Server) (*certfile.Reloader, error) {
	if certFile == "" { // Config.Validate saw the key file is not named either
		return nil, nil
	}
	r, err := certfile.New(certfile.Config{
		Name: name, CertFile: certFile, KeyFile: keyFile,
		CheckInterval: s.cfg.CertCheckInterval, Logger: s.logger, Registerer: s.registry,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return r, nil
}

// tlsPort serves an http.Server over TLS.
type tlsPort struct {
	*http.Server
}

func (p tlsPort) Serve(ln net.Listener) error {
	return p.Server.Serve(tls.NewListener(ln, p.TLSConfig))
}
