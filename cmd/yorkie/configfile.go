package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// configKey is where one key of the config file goes.
type configKey struct {
	// flag is the server flag the key sets; "" for upstream keys this
	// server has no use for, which are accepted and ignored.
	flag string
	// upstreamDefault is upstream's default of a key whose flag another
	// part of this server has not registered yet: that value (or an empty
	// one) is accepted, any other refused.
	upstreamDefault string
	// warn is logged when the key is set to a non-empty value.
	warn string
}

// flagsSection is the section whose keys are flag names: every flag of the
// server can be set from the file, including those no section lists.
const flagsSection = "Flags"

// configSections maps the config file's sections and keys to the server's
// flags. The upstream sections and keys are upstream's config.sample.yml
// (and upstream's Config structs); ours are added beside them. Defaults are
// the flags' own: a key the file does not set keeps the flag's default.
func configSections() map[string]map[string]configKey {
	ignored := configKey{}
	kafka := configKey{warn: "this server publishes no analytics events to Kafka; the setting is ignored"}
	return map[string]map[string]configKey{
		"RPC": {
			"Port":              {flag: "rpc-port"},
			"CertFile":          {flag: "rpc-cert-file"},
			"KeyFile":           {flag: "rpc-key-file"},
			"ReadHeaderTimeout": {flag: "rpc-read-header-timeout"},
			"IdleTimeout":       {flag: "rpc-idle-timeout"},
			// ours
			"Addr":                    {flag: "rpc-addr"},
			"ReadBodyTimeout":         {flag: "rpc-read-body-timeout"},
			"MaxRequestBytes":         {flag: "rpc-max-request-bytes"},
			"MaxInflightRequestBytes": {flag: "rpc-max-inflight-request-bytes"},
			"FastHTTP1":               {flag: "rpc-fast-http1"},
			"FastJSON":                {flag: "rpc-fast-json"},
		},
		"RPC.Auth": {
			"GitHubClientID":            {flag: "auth-github-client-id"},
			"GitHubClientSecret":        {flag: "auth-github-client-secret"},
			"GitHubRedirectURL":         {flag: "auth-github-redirect-url", upstreamDefault: "http://localhost:8080/auth/github/callback"},
			"GitHubCallbackRedirectURL": {flag: "auth-github-callback-redirect-url", upstreamDefault: "http://localhost:5173/dashboard"},
			"GitHubAuthURL":             {flag: "auth-github-auth-url", upstreamDefault: "https://github.com/login/oauth/authorize"},
			"GitHubTokenURL":            {flag: "auth-github-token-url", upstreamDefault: "https://github.com/login/oauth/access_token"},
			"GitHubDeviceAuthURL":       {flag: "auth-github-device-auth-url", upstreamDefault: "https://github.com/login/device/code"},
			"GitHubUserURL":             {flag: "auth-github-user-url", upstreamDefault: "https://api.github.com/user"},
		},
		"Profiling": {
			"Port":         {flag: "profiling-port"},
			"PprofEnabled": {flag: "pprof-enabled"},
			// ours
			"Addr":     {flag: "profiling-addr"},
			"CertFile": {flag: "profiling-cert-file"},
			"KeyFile":  {flag: "profiling-key-file"},
		},
		// Upstream's leadership lease; nodes here hold leases in the
		// session store (SessionStore.NodeTTL).
		"Membership": {
			"LeaseDuration":   ignored,
			"RenewalInterval": ignored,
		},
		"Housekeeping": {
			"Interval":                    {flag: "housekeeping-interval"},
			"CandidatesLimit":             {flag: "housekeeping-candidates-limit"},
			"DeactivateConcurrency":       {flag: "housekeeping-deactivate-concurrency"},
			"CompactionMinChanges":        {flag: "housekeeping-compaction-min-changes", upstreamDefault: "1000"},
			"ProjectStatsRefreshInterval": {flag: "housekeeping-project-stats-refresh-interval"},
			// ours
			"ClientDeactivateThreshold": {flag: "client-deactivate-threshold"},
		},
		"Backend": {
			"AdminUser":                     {flag: "backend-admin-user"},
			"AdminPassword":                 {flag: "backend-admin-password"},
			"SecretKey":                     {flag: "backend-secret-key"},
			"AdminTokenDuration":            {flag: "backend-admin-token-duration"},
			"UseDefaultProject":             {flag: "backend-use-default-project"},
			"SnapshotDisableGC":             {flag: "backend-snapshot-disable-gc"},
			"SnapshotCacheSize":             {flag: "snapshot-cache-size"},
			"AuthWebhookCacheSize":          {flag: "auth-webhook-cache-size"},
			"AuthWebhookCacheTTL":           {flag: "auth-webhook-cache-auth-ttl"},
			"ProjectCacheSize":              {flag: "mongo-project-cache-size"},
			"ProjectCacheTTL":               {flag: "project-cache-ttl"},
			"ChannelSessionTTL":             {flag: "channel-session-ttl"},
			"ChannelSessionCleanupInterval": {flag: "channel-session-cleanup-interval"},
			"ChannelSessionCountCacheSize":  {flag: "channel-session-count-cache-size"},
			"ChannelSessionCountCacheTTL":   {flag: "channel-session-count-cache-ttl"},
			"Hostname":                      {flag: "hostname"},
			"GatewayAddr":                   {flag: "backend-gateway-addr"},
			"RPCAddr":                       {flag: "backend-rpc-addr"},
			"EnableWebhookValidation":       {flag: "backend-enable-webhook-validation"},
			"ClusterRPCTimeout":             {flag: "cluster-rpc-timeout"},
			"ClusterClientTimeout":          {flag: "cluster-client-timeout"},
			"ClusterClientPoolSize":         {flag: "cluster-client-pool-size"},
			"MaxConcurrentClusterRPCs":      {flag: "max-concurrent-cluster-rpcs"},
			"ClusterSecret":                 {flag: "cluster-secret"},
			// ours
			"ClusterCAFile":               {flag: "cluster-ca-file"},
			"SnapshotInterval":            {flag: "snapshot-interval"},
			"SnapshotThreshold":           {flag: "snapshot-threshold"},
			"MaxSizePerDocument":          {flag: "max-size-per-document"},
			"DocumentCacheBytes":          {flag: "document-cache-bytes"},
			"MaxChangesPerPack":           {flag: "max-changes-per-pack"},
			"MaxClientMetadataBytes":      {flag: "max-client-metadata-bytes"},
			"MaxWatchStreamsPerClient":    {flag: "max-watch-streams-per-client"},
			"MaxAttachmentsPerClient":     {flag: "max-attachments-per-client"},
			"ChannelMaxPayloadBytes":      {flag: "channel-max-payload-bytes"},
			"AuthWebhookCacheUnauthTTL":   {flag: "auth-webhook-cache-unauth-ttl"},
			"AuthWebhookRequestTimeout":   {flag: "auth-webhook-request-timeout"},
			"AuthWebhookMaxRetries":       {flag: "auth-webhook-max-retries"},
			"AuthWebhookMinWaitInterval":  {flag: "auth-webhook-min-wait-interval"},
			"AuthWebhookMaxWaitInterval":  {flag: "auth-webhook-max-wait-interval"},
			"EventWebhookRequestTimeout":  {flag: "event-webhook-request-timeout"},
			"EventWebhookMaxRetries":      {flag: "event-webhook-max-retries"},
			"EventWebhookMinWaitInterval": {flag: "event-webhook-min-wait-interval"},
			"EventWebhookMaxWaitInterval": {flag: "event-webhook-max-wait-interval"},
			"EventWebhookDebounce":        {flag: "event-webhook-debounce"},
		},
		"Mongo": {
			"ConnectionTimeout":            {flag: "mongo-connection-timeout"},
			"ConnectionURI":                {flag: "mongo-connection-uri"},
			"YorkieDatabase":               {flag: "mongo-yorkie-database"},
			"PingTimeout":                  {flag: "mongo-ping-timeout"},
			"MonitoringEnabled":            {flag: "mongo-monitoring-enabled"},
			"MonitoringSlowQueryThreshold": {flag: "mongo-monitoring-slow-query-threshold"},
			"CacheStatsEnabled":            {flag: "mongo-cache-stats-enabled"},
			"CacheStatsInterval":           {flag: "mongo-cache-stats-interval"},
			"ClientCacheSize":              {flag: "mongo-client-cache-size"},
			"DocCacheSize":                 {flag: "mongo-doc-cache-size"},
			"ChangeCacheSize":              {flag: "mongo-change-cache-size"},
			"VectorCacheSize":              {flag: "mongo-vector-cache-size"},
			"ProjectCacheSize":             {flag: "mongo-project-cache-size"},
			"ProjectCacheTTL":              {flag: "mongo-project-cache-ttl"},
		},
		"Kafka": {
			"Addresses": kafka, "UserEventsTopic": ignored, "DocumentEventsTopic": ignored,
			"ClientEventsTopic": ignored, "ChannelEventsTopic": ignored, "SessionEventsTopic": ignored,
			"WriteTimeout": ignored,
		},
		"StarRocks": {
			"DSN": {warn: "this server writes no analytics to StarRocks; the setting is ignored"},
		},
		// ours
		"Log": {
			"Level": {flag: "log-level"},
		},
		"SessionStore": {
			"Kind":                     {flag: "session-store"},
			"EtcdEndpoints":            {flag: "etcd-endpoints"},
			"RedisAddr":                {flag: "redis-addr"},
			"RedisCloseConnOnReadOnly": {flag: "redis-close-conn-on-readonly"},
			"NodeTTL":                  {flag: "node-ttl"},
		},
		"Affinity": {
			"Mode":             {flag: "affinity-mode"},
			"AdvertiseAddr":    {flag: "advertise-addr"},
			"SessionKeyHeader": {flag: "session-key-header"},
		},
	}
}

// applyConfigFile sets the flags from the config file at path, except
// those given on the command line (under any of their names). It returns
// the warnings to log once the logger exists. An unknown section or key, a
// value of the wrong shape or one its flag refuses stops it, naming the key.
func applyConfigFile(fs *flag.FlagSet, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	warnings, err := applyConfig(fs, data)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return warnings, nil
}

func applyConfig(fs *flag.FlagSet, data []byte) ([]string, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file sets nothing
		}
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	given := map[flagIdentity]bool{}
	fs.Visit(func(f *flag.Flag) { given[identity(f.Value)] = true })

	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want sections (RPC:, Backend:, ...)", doc.Line)
	}
	sections := configSections()
	var warnings []string
	set := func(key, name string, v *yaml.Node) error {
		value, err := scalar(key, v)
		if err != nil {
			return err
		}
		if _, refused := refusedFlags()[name]; refused {
			return fmt.Errorf("%s: --%s is not supported by this server", key, name)
		}
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("%s (line %d): --%s is not a flag of this server", key, v.Line, name)
		}
		if given[identity(f.Value)] {
			return nil // the command line wins
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s (line %d): invalid value %q: %w", key, v.Line, value, err)
		}
		return nil
	}
	var walk func(prefix string, m *yaml.Node) error
	walk = func(section string, m *yaml.Node) error {
		keys := sections[section]
		if err := unique(section+".", m); err != nil {
			return err
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := section + "." + k.Value
			if section == flagsSection {
				if err := set(key, k.Value, v); err != nil {
					return err
				}
				continue
			}
			if _, ok := sections[key]; ok && v.Kind == yaml.MappingNode {
				if err := walk(key, v); err != nil {
					return err
				}
				continue
			}
			ck, ok := keys[k.Value]
			if !ok {
				return fmt.Errorf("%s (line %d): unknown key; %s has %s", key, k.Line, section, strings.Join(sortedKeys(keys), ", "))
			}
			if v.Tag == "!!null" {
				continue
			}
			switch {
			case ck.warn != "":
				if v.Value != "" {
					warnings = append(warnings, key+": "+ck.warn)
				}
			case ck.flag == "":
			case fs.Lookup(ck.flag) == nil && (v.Value == "" || v.Value == ck.upstreamDefault):
				// upstream's default of a setting this server does not serve yet
			case fs.Lookup(ck.flag) == nil:
				return fmt.Errorf("%s (line %d): not supported by this server yet (upstream's --%s)", key, v.Line, ck.flag)
			default:
				if err := set(key, ck.flag, v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := unique("", doc); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if _, ok := sections[k.Value]; !ok && k.Value != flagsSection {
			names := append(sortedKeys(sections), flagsSection)
			return nil, fmt.Errorf("%s (line %d): unknown section; want one of %s", k.Value, k.Line, strings.Join(names, ", "))
		}
		if v.Tag == "!!null" {
			continue
		}
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s (line %d): want keys under the section", k.Value, k.Line)
		}
		if err := walk(k.Value, v); err != nil {
			return nil, err
		}
	}
	return warnings, nil
}

// unique refuses a key set twice in one mapping: which one wins would be
// a guess.
func unique(prefix string, m *yaml.Node) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if seen[k.Value] {
			return fmt.Errorf("%s%s (line %d): set twice", prefix, k.Value, k.Line)
		}
		seen[k.Value] = true
	}
	return nil
}

// scalar turns a value into a flag's text: a list becomes comma-separated
// (etcd endpoints).
func scalar(key string, v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return v.Value, nil
	case yaml.SequenceNode:
		items := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("%s (line %d): want a list of values", key, item.Line)
			}
			items = append(items, item.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("%s (line %d): want a value, not a section", key, v.Line)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// flagIdentity tells apart the variables behind flags: two names of one
// setting (ours and upstream's) share it.
type flagIdentity struct {
	typ reflect.Type
	ptr uintptr
}

func identity(v flag.Value) flagIdentity {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		return flagIdentity{rv.Type(), rv.Pointer()}
	}
	return flagIdentity{typ: rv.Type()}
}
