package main

import (
	"flag"

	"github.com/yorkie-affinity/yorkie/server"
)

// tlsMetricsFlags are the flags of TLS and of upstream's metric series.
type tlsMetricsFlags struct {
	hostname string
}

func (f *tlsMetricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.hostname, "hostname", "", "hostname label of the yorkie_* metric series upstream Yorkie exports")
}

// apply sets the flags' settings on cfg.
func (f *tlsMetricsFlags) apply(cfg *server.Config) error {
	cfg.Hostname = f.hostname
	return nil
}
