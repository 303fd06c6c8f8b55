package main

import (
	"flag"

	"github.com/yorkie-affinity/yorkie/server"
)

// tlsMetricsFlags are the flags of TLS and of upstream's metric series.
type tlsMetricsFlags struct {
	hostname                    string
	rpcCert, rpcKey             string
	clusterCA                   string
	profilingCert, profilingKey string
}

func (f *tlsMetricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.hostname, "hostname", "", "hostname label of the yorkie_* metric series upstream Yorkie exports")
	fs.StringVar(&f.rpcCert, "rpc-cert-file", "", "PEM certificate chain of the RPC port: with --rpc-key-file it serves TLS (HTTP/1.1 and HTTP/2), reloaded when the files change, and nodes call each other over TLS")
	fs.StringVar(&f.rpcKey, "rpc-key-file", "", "PEM private key of --rpc-cert-file")
	fs.StringVar(&f.clusterCA, "cluster-ca-file", "", "PEM CA certificates that verify other nodes' RPC ports (default: the system's roots); needs --rpc-cert-file")
	fs.StringVar(&f.profilingCert, "profiling-cert-file", "", "PEM certificate chain of the profiling port: with --profiling-key-file it serves TLS, reloaded when the files change")
	fs.StringVar(&f.profilingKey, "profiling-key-file", "", "PEM private key of --profiling-cert-file")
}

// apply sets the flags' settings on cfg; the server checks them.
func (f *tlsMetricsFlags) apply(cfg *server.Config) {
	cfg.Hostname = f.hostname
	cfg.RPCCertFile, cfg.RPCKeyFile = f.rpcCert, f.rpcKey
	cfg.ClusterCAFile = f.clusterCA
	cfg.ProfilingCertFile, cfg.ProfilingKeyFile = f.profilingCert, f.profilingKey
}
