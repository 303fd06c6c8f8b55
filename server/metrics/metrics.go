// Package metrics records upstream Yorkie's `yorkie_*` Prometheus series
// under upstream's names, types and labels, so that dashboards and alerts
// written for upstream keep working. The server's own series (yorkie_rpc_*,
// yorkie_backend_*, ...) stay beside them where they say more.
//
// A nil *Metrics records nothing, so layers can be tested without it.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/channel"
)

// Label names, as upstream spells them.
const (
	labelProjectID   = "project_id"
	labelProjectName = "project_name"
	labelHostname    = "hostname"
	labelEventType   = "doc_event_type"
	labelTaskType    = "task_type"
	labelChannelKey  = "channel_key"
)

// RPC types, the rpc_type label.
const (
	Unary        = "unary"
	ServerStream = "server_stream"
)

// UserAgentHeader carries the SDK's name and version, "<type>/<version>".
const UserAgentHeader = "x-yorkie-user-agent"

// maxUserAgents bounds the distinct SDK (type, version) pairs labelled: the
// header comes from clients, and a label per made-up value would let them
// grow the registry without end. Later pairs are counted as "other".
const maxUserAgents = 64

// maxUserAgentLen bounds one part of the header that becomes a label.
const maxUserAgentLen = 64

// TopChannels is how many channels yorkie_channel_sessions_top_n lists.
const TopChannels = 10

// Config configures Metrics.
type Config struct {
	// Registerer receives the series. Required.
	Registerer prometheus.Registerer
	// Hostname is the hostname label of every series that has one
	// (upstream's --hostname, "" by default).
	Hostname string
	// Version is the server_version label of yorkie_server_version.
	Version string
	// Channels, when set, lists the channel sessions this node holds at
	// scrape time, for the yorkie_channel_* gauges.
	Channels func() []channel.KeySessions
}

// Metrics holds upstream's series.
type Metrics struct {
	hostname string

	handled         *prometheus.CounterVec
	handledDuration *prometheus.HistogramVec

	pushPullSeconds      prometheus.Histogram
	receivedChanges      *prometheus.CounterVec
	sentChanges          *prometheus.CounterVec
	receivedOperations   *prometheus.CounterVec
	sentOperations       *prometheus.CounterVec
	pushPullErrors       *prometheus.CounterVec
	snapshotSeconds      prometheus.Histogram
	snapshotBytes        *prometheus.CounterVec
	backgroundGoroutines *prometheus.GaugeVec

	watchConnections  *prometheus.GaugeVec
	watchEvents       *prometheus.CounterVec
	watchPayloadBytes *prometheus.CounterVec

	userAgents *prometheus.CounterVec

	mu     sync.Mutex
	agents map[[2]string]bool // SDK (type, version) pairs labelled so far
	names  map[string]string  // project ID -> name, as calls showed them
}

// New registers upstream's series on cfg.Registerer.
func New(cfg Config) (*Metrics, error) {
	if cfg.Registerer == nil {
		return nil, errors.New("metrics: Config.Registerer is required")
	}
	project := []string{labelProjectID, labelProjectName, labelHostname}
	rpcLabels := []string{"rpc_type", "rpc_service", "rpc_method", "rpc_code", labelHostname}
	counter := func(subsystem, name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "yorkie", Subsystem: subsystem, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		hostname: cfg.Hostname,
		handled:  counter("rpc", "server_handled_total", "RPCs completed on the server, whatever their result.", rpcLabels),
		handledDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "yorkie", Subsystem: "rpc", Name: "server_handled_response_seconds",
			Help: "Response time of the unary RPCs completed on the server.",
		}, rpcLabels),
		pushPullSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "yorkie", Subsystem: "pushpull", Name: "response_seconds",
			Help: "Time the owner took to serve a pack exchange (attach, PushPull, detach, remove).",
		}),
		receivedChanges:    counter("pushpull", "received_changes_total", "Changes in the packs clients pushed.", project),
		sentChanges:        counter("pushpull", "sent_changes_total", "Changes in the packs answered to clients.", project),
		receivedOperations: counter("pushpull", "received_operations_total", "Operations in the packs clients pushed.", project),
		sentOperations:     counter("pushpull", "sent_operations_total", "Operations in the packs answered to clients.", project),
		pushPullErrors:     counter("pushpull", "errors_total", "Pack exchanges that failed.", project),
		snapshotSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "yorkie", Subsystem: "pushpull", Name: "snapshot_duration_seconds",
			Help: "Time to build the snapshot of an answer to a client far behind.",
		}),
		snapshotBytes: counter("pushpull", "snapshot_bytes_total", "Bytes of the snapshots answered to clients.", project),
		backgroundGoroutines: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "yorkie", Subsystem: "background", Name: "goroutines_total",
			Help: "Goroutines running background work, by task type.",
		}, []string{labelTaskType}),
		watchConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "yorkie", Subsystem: "stream", Name: "watch_document_stream_connections_total",
			Help: "Watch streams open on this node.",
		}, project),
		watchEvents: counter("stream", "watch_document_events_total", "Document events sent on Watch streams.",
			append(project[:3:3], labelEventType)),
		watchPayloadBytes: counter("stream", "watch_document_event_payload_bytes_total", "Payload bytes of the document events sent on Watch streams.",
			append(project[:3:3], labelEventType)),
		userAgents: counter("user_agent", "total", "Calls by SDK type and version, procedure and project.",
			[]string{"sdk_type", "sdk_version", "grpc_method", labelProjectID, labelProjectName, labelHostname}),
		agents: map[[2]string]bool{},
		names:  map[string]string{},
	}
	version := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "yorkie", Subsystem: "server", Name: "version",
		Help: "1 for the server_version label of the version running.",
	}, []string{"server_version"})
	version.WithLabelValues(cfg.Version).Set(1)
	cs := []prometheus.Collector{
		version, m.handled, m.handledDuration, m.pushPullSeconds, m.receivedChanges, m.sentChanges,
		m.receivedOperations, m.sentOperations, m.pushPullErrors, m.snapshotSeconds, m.snapshotBytes,
		m.backgroundGoroutines, m.watchConnections, m.watchEvents, m.watchPayloadBytes, m.userAgents,
		&channelCollector{m: m, list: cfg.Channels},
	}
	for _, c := range cs {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// projectLabels returns the labels of a project series; nil p is the
// default project. It remembers the project's name for the channel gauges.
func (m *Metrics) projectLabels(p *database.ProjectInfo) (id, name string) {
	if p == nil {
		return database.DefaultProjectID, database.DefaultProjectName
	}
	m.mu.Lock()
	if m.names[p.ID] != p.Name {
		m.names[p.ID] = p.Name
	}
	m.mu.Unlock()
	return p.ID, p.Name
}

// projectName returns the name calls showed for a project ID.
func (m *Metrics) projectName(id string) string {
	if id == database.DefaultProjectID {
		return database.DefaultProjectName
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.names[id]
}

// Code returns the rpc_code label of a call's result: "ok", or the Connect
// code's name.
func Code(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled):
		return connect.CodeCanceled.String()
	case errors.Is(err, context.DeadlineExceeded):
		return connect.CodeDeadlineExceeded.String()
	}
	return connect.CodeOf(err).String()
}

// Handled records a finished call of procedure ("/<service>/<method>");
// unary calls also record their duration.
func (m *Metrics) Handled(rpcType, procedure string, err error, d time.Duration) {
	if m == nil {
		return
	}
	parts := strings.Split(procedure, "/")
	if len(parts) != 3 {
		return
	}
	code := Code(err)
	m.handled.WithLabelValues(rpcType, parts[1], parts[2], code, m.hostname).Inc()
	if rpcType == Unary {
		m.handledDuration.WithLabelValues(rpcType, parts[1], parts[2], code, m.hostname).Observe(d.Seconds())
	}
}

// UserAgent counts a call by the SDK named in its header.
func (m *Metrics) UserAgent(header http.Header, p *database.ProjectInfo, procedure string) {
	if m == nil {
		return
	}
	sdkType, sdkVersion := m.agent(header.Get(UserAgentHeader))
	id, name := m.projectLabels(p)
	m.userAgents.WithLabelValues(sdkType, sdkVersion, procedure, id, name, m.hostname).Inc()
}

// agent splits the user agent header as upstream does, at its last "/",
// and bounds what it may add to the labels.
func (m *Metrics) agent(ua string) (string, string) {
	i := strings.LastIndexByte(ua, '/')
	if i < 0 {
		return "", ""
	}
	pair := [2]string{ua[:i], ua[i+1:]}
	if len(pair[0]) > maxUserAgentLen || len(pair[1]) > maxUserAgentLen {
		return "other", "other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.agents[pair] {
		if len(m.agents) >= maxUserAgents {
			return "other", "other"
		}
		m.agents[pair] = true
	}
	return pair[0], pair[1]
}

// Pack is what one pack exchange moved.
type Pack struct {
	ReceivedChanges, ReceivedOperations int
	SentChanges, SentOperations         int
	SnapshotBytes                       int
}

// PushPull records a pack exchange the owner served, or its failure.
func (m *Metrics) PushPull(p *database.ProjectInfo, pack Pack, d time.Duration, err error) {
	if m == nil {
		return
	}
	id, name := m.projectLabels(p)
	if err != nil {
		m.pushPullErrors.WithLabelValues(id, name, m.hostname).Inc()
		return
	}
	m.receivedChanges.WithLabelValues(id, name, m.hostname).Add(float64(pack.ReceivedChanges))
	m.receivedOperations.WithLabelValues(id, name, m.hostname).Add(float64(pack.ReceivedOperations))
	m.sentChanges.WithLabelValues(id, name, m.hostname).Add(float64(pack.SentChanges))
	m.sentOperations.WithLabelValues(id, name, m.hostname).Add(float64(pack.SentOperations))
	m.snapshotBytes.WithLabelValues(id, name, m.hostname).Add(float64(pack.SnapshotBytes))
	m.pushPullSeconds.Observe(d.Seconds())
}

// SnapshotSeconds is the histogram of answer snapshots' build times (nil
// for a nil m).
func (m *Metrics) SnapshotSeconds() prometheus.Observer {
	if m == nil {
		return nil
	}
	return m.snapshotSeconds
}

// Background is the gauge of the goroutines running one type of background
// task (nil for a nil m).
func (m *Metrics) Background(taskType string) prometheus.Gauge {
	if m == nil {
		return nil
	}
	return m.backgroundGoroutines.WithLabelValues(taskType)
}

// WatchOpened counts an open Watch stream of project p; the returned func
// counts it closed.
func (m *Metrics) WatchOpened(p *database.ProjectInfo) func() {
	if m == nil {
		return func() {}
	}
	id, name := m.projectLabels(p)
	g := m.watchConnections.WithLabelValues(id, name, m.hostname)
	g.Inc()
	return g.Dec
}

// WatchEvent counts a document event of type eventType (upstream's
// spelling, "document-changed", ...) sent on a Watch stream of project p.
func (m *Metrics) WatchEvent(p *database.ProjectInfo, eventType string, payloadBytes int) {
	if m == nil {
		return
	}
	id, name := m.projectLabels(p)
	m.watchEvents.WithLabelValues(id, name, m.hostname, eventType).Inc()
	m.watchPayloadBytes.WithLabelValues(id, name, m.hostname, eventType).Add(float64(payloadBytes))
}
