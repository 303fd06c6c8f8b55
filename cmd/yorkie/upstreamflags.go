package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"
)

// ignoredUsage starts the usage of the upstream flags that change nothing
// here.
const ignoredUsage = "upstream's flag, accepted with no effect: "

// ignoredFlagsGiven lists the given flags that change nothing here, each
// with why, so the log can say so.
func ignoredFlagsGiven(fs *flag.FlagSet) [][2]string {
	var out [][2]string
	fs.Visit(func(f *flag.Flag) {
		if why, ok := strings.CutPrefix(f.Usage, ignoredUsage); ok {
			out = append(out, [2]string{"--" + f.Name, why})
		}
	})
	return out
}

// Flags of upstream Yorkie's "yorkie server" that this server accepts so an
// upstream command line keeps working, but that change nothing here: each
// tunes a part this server does differently. The reason is in the usage.
// Their defaults are upstream's.
func registerIgnoredUpstreamFlags(fs *flag.FlagSet) {
	type ignored struct {
		name, def, reason string
	}
	for _, f := range []ignored{
		{"backend-gateway-addr", "localhost:8080", "calls for a document another node owns are forwarded to the owner directly, not through a gateway"},
		{"mongo-monitoring-slow-query-threshold", "100ms", "no query monitoring; the database calls' latency is in /metrics"},
	} {
		fs.String(f.name, f.def, ignoredUsage+f.reason)
	}
	for _, f := range []ignored{
		{"backend-snapshot-disable-gc", "false", "a snapshot stores the document as the SDK builds it"},
		{"mongo-monitoring-enabled", "false", "no query monitoring; the database calls' latency is in /metrics"},
		{"mongo-cache-stats-enabled", "false", "this server keeps no upstream-style MongoDB caches"},
	} {
		fs.Bool(f.name, f.def == "true", ignoredUsage+f.reason)
	}
	for _, f := range []struct {
		name   string
		def    int
		reason string
	}{
		{"housekeeping-deactivate-concurrency", 8, "housekeeping deactivates the clients of one run in turn"},
		{"snapshot-cache-size", 1000, "built documents are cached by size (--document-cache-bytes)"},
		{"mongo-project-cache-size", 256, "the project cache holds every project in use, expiring by --project-cache-ttl"},
		{"mongo-client-cache-size", 10000, "this server keeps no upstream-style MongoDB caches"},
		{"mongo-doc-cache-size", 10000, "this server keeps no upstream-style MongoDB caches"},
		{"mongo-change-cache-size", 10000, "this server keeps no upstream-style MongoDB caches"},
		{"mongo-vector-cache-size", 10000, "this server keeps no upstream-style MongoDB caches"},
		{"channel-session-count-cache-size", 10000, "channel counts are kept live, not cached"},
		{"cluster-client-pool-size", 1, "node-to-node calls share one HTTP/2 client per peer"},
		{"max-concurrent-cluster-rpcs", 5000, "node-to-node calls are bounded by the callers' own limits"},
	} {
		fs.Int(f.name, f.def, ignoredUsage+f.reason)
	}
	for _, f := range []struct {
		name   string
		def    time.Duration
		reason string
	}{
		{"mongo-ping-timeout", 5 * time.Second, "the connection is checked within --mongo-connection-timeout"},
		{"mongo-cache-stats-interval", 30 * time.Second, "this server keeps no upstream-style MongoDB caches"},
		{"housekeeping-project-stats-refresh-interval", 5 * time.Minute, "project statistics are read when asked for"},
		{"channel-session-cleanup-interval", 10 * time.Second, "expired channel sessions are removed as they expire"},
		{"channel-session-count-cache-ttl", 30 * time.Second, "channel counts are kept live, not cached"},
		{"cluster-rpc-timeout", 10 * time.Second, "a forwarded call ends with the call it serves"},
		{"cluster-client-timeout", 30 * time.Second, "a forwarded call ends with the call it serves"},
	} {
		fs.Duration(f.name, f.def, ignoredUsage+f.reason)
	}
}

// refusedFlags are upstream's flags of parts this server does not have.
// Each is accepted by the parser (so the message can say what to do) and,
// when given, stops start-up.
func refusedFlags() map[string]string {
	const kafka = "this server publishes no analytics events to Kafka"
	return map[string]string{
		"kafka-addresses":             kafka,
		"kafka-user-events-topic":     kafka,
		"kafka-document-events-topic": kafka,
		"kafka-client-events-topic":   kafka,
		"kafka-channel-events-topic":  kafka,
		"kafka-session-events-topic":  kafka,
		"kafka-write-timeout":         kafka,
		"starrocks-dsn":               "this server writes no analytics to StarRocks",
	}
}

func registerRefusedFlags(fs *flag.FlagSet) {
	for name, why := range refusedFlags() {
		fs.String(name, "", "upstream's flag, refused: "+why)
	}
}

// checkRefusedFlags names the first refused flag given, and what to do.
func checkRefusedFlags(fs *flag.FlagSet) error {
	var err error
	refused := refusedFlags()
	fs.Visit(func(f *flag.Flag) {
		if why, ok := refused[f.Name]; ok && err == nil {
			err = fmt.Errorf("--%s: %s; remove the flag (analytics dashboards fed by it stay empty)", f.Name, why)
		}
	})
	return err
}

// stringFlag registers one string flag under several names (ours first,
// then upstream's), all setting the same value.
func stringFlag(fs *flag.FlagSet, names []string, def, usage string) *string {
	v := new(string)
	for i, name := range names {
		u := usage
		if i > 0 {
			u = "same as --" + names[0]
		}
		fs.StringVar(v, name, def, u)
	}
	return v
}

// durationFlag is stringFlag for durations.
func durationFlag(fs *flag.FlagSet, names []string, def time.Duration, usage string) *time.Duration {
	v := new(time.Duration)
	for i, name := range names {
		u := usage
		if i > 0 {
			u = "same as --" + names[0]
		}
		fs.DurationVar(v, name, def, u)
	}
	return v
}

// parseLogLevel reads upstream's log levels. slog has nothing above error;
// fatal and panic map to levels above it, so only messages logged at them
// (none, today) are written.
func parseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	case "panic":
		return slog.LevelError + 4, nil
	case "fatal":
		return slog.LevelError + 8, nil
	}
	return 0, fmt.Errorf("--log-level %q: want debug, info, warn, error, panic or fatal", s)
}

// rpcHost checks the --rpc-addr value: a host name or IP address, without
// a port (--rpc-port has it); IPv6 may be bracketed.
func rpcHost(addr string) (string, error) {
	if addr == "" {
		return "", nil
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	if _, _, err := net.SplitHostPort(addr); err == nil || strings.ContainsAny(host, "[]/ ") ||
		(strings.Contains(host, ":") && net.ParseIP(host) == nil) {
		return "", fmt.Errorf("--rpc-addr %q: want a host name or IP address without a port (the port is --rpc-port)", addr)
	}
	return host, nil
}
