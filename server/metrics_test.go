package server_test

import (
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// upstreamSeries are upstream Yorkie 0.7.17's 19 series, with their types
// and label names (server/profiling/prometheus/metrics.go there).
var upstreamSeries = map[string]struct {
	typ    dto.MetricType
	labels []string
}{
	"yorkie_server_version":                                  {dto.MetricType_GAUGE, []string{"server_version"}},
	"yorkie_rpc_server_handled_total":                        {dto.MetricType_COUNTER, []string{"rpc_type", "rpc_service", "rpc_method", "rpc_code", "hostname"}},
	"yorkie_rpc_server_handled_response_seconds":             {dto.MetricType_HISTOGRAM, []string{"rpc_type", "rpc_service", "rpc_method", "rpc_code", "hostname"}},
	"yorkie_pushpull_response_seconds":                       {dto.MetricType_HISTOGRAM, nil},
	"yorkie_pushpull_received_changes_total":                 {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_pushpull_sent_changes_total":                     {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_pushpull_received_operations_total":              {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_pushpull_sent_operations_total":                  {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_pushpull_errors_total":                           {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_pushpull_snapshot_duration_seconds":              {dto.MetricType_HISTOGRAM, nil},
	"yorkie_pushpull_snapshot_bytes_total":                   {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname"}},
	"yorkie_background_goroutines_total":                     {dto.MetricType_GAUGE, []string{"task_type"}},
	"yorkie_stream_watch_document_stream_connections_total":  {dto.MetricType_GAUGE, []string{"project_id", "project_name", "hostname"}},
	"yorkie_stream_watch_document_events_total":              {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname", "doc_event_type"}},
	"yorkie_stream_watch_document_event_payload_bytes_total": {dto.MetricType_COUNTER, []string{"project_id", "project_name", "hostname", "doc_event_type"}},
	"yorkie_channel_total":                                   {dto.MetricType_GAUGE, []string{"project_id", "project_name", "hostname"}},
	"yorkie_channel_sessions_total":                          {dto.MetricType_GAUGE, []string{"project_id", "project_name", "hostname"}},
	"yorkie_channel_sessions_top_n":                          {dto.MetricType_GAUGE, []string{"channel_key", "project_id", "project_name", "hostname"}},
	"yorkie_user_agent_total":                                {dto.MetricType_COUNTER, []string{"sdk_type", "sdk_version", "grpc_method", "project_id", "project_name", "hostname"}},
}

// userAgent sets the header the JS SDK sends with every call.
type userAgent struct{ rt http.RoundTripper }

func (u userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-yorkie-user-agent", "@yorkie-js-sdk/0.7.7")
	return u.rt.RoundTrip(r)
}

// scrape reads the profiling port's /metrics as Prometheus would.
func scrape(t *testing.T, srv *server.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + srv.ProfilingAddr() + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// sum adds up a family's samples (histograms by their counts) that carry
// the given label values.
func sum(f *dto.MetricFamily, labels map[string]string) float64 {
	var total float64
	for _, m := range f.GetMetric() {
		match := true
		for k, v := range labels {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			total += m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			total += m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// TestUpstreamMetrics runs what an SDK does (activate, attach, edit, sync,
// watch, a channel, a late joiner answered with a snapshot, a call on a
// detached document) and checks that /metrics has every upstream series
// with upstream's type and labels, and that each moved.
func TestUpstreamMetrics(t *testing.T) {
	srv := servertest.Start(t, func(c *server.Config) {
		c.Hostname = "node-a"
		c.Admin.Version = "0.7.17-test"
		c.SnapshotThreshold = 5
		c.SnapshotInterval = 3
	})
	hc := servertest.HTTPClient(t, servertest.ConnectJSON)
	hc.Transport = userAgent{hc.Transport}
	client := v1connect.NewYorkieServiceClient(hc, servertest.BaseURL(srv), servertest.ConnectJSON.ClientOptions()...)
	ctx := wire.Context(t)
	key := wire.UniqueKey(t, "metrics")

	a, b := wire.NewReplica(t, client), wire.NewReplica(t, client)
	a.MustAttach(key)
	b.MustAttach(key)
	watch := b.Watch(t)
	watch.Next(t)        // initialization
	aWatch := a.Watch(t) // b hears that a watches
	aWatch.Next(t)
	a.Edit(2)
	a.MustPushPull()
	// b hears of a's changes, then pulls them.
	for {
		ev := watch.Next(t).GetEvent().GetDocEvent().GetEvent()
		if ev.GetType() == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
			break
		}
	}
	b.MustPushPull()
	a.Edit(6)
	a.MustPushPull()

	// A client joining late is answered with a snapshot.
	late := wire.NewReplica(t, client)
	resp, err := late.Attach(ctx, key)
	require.NoError(t, err)
	require.NotEmpty(t, resp.GetChangePack().GetSnapshot(), "the late joiner gets a snapshot")

	// A PushPull on a document the client left fails.
	_, err = late.Detach(ctx)
	require.NoError(t, err)
	_, err = late.PushPull(ctx)
	require.Error(t, err)

	_, err = client.AttachChannel(ctx, connect.NewRequest(&api.AttachChannelRequest{ClientId: a.ID, ChannelKey: "room.1"}))
	require.NoError(t, err)

	// An AdminService call, whatever its answer, is counted too.
	admin := v1connect.NewAdminServiceClient(hc, servertest.BaseURL(srv))
	_, _ = admin.GetServerVersion(ctx, connect.NewRequest(&api.GetServerVersionRequest{}))

	fams := scrape(t, srv)
	for name, want := range upstreamSeries {
		f := fams[name]
		require.NotNil(t, f, "series %s is missing", name)
		assert.Equal(t, want.typ, f.GetType(), "type of %s", name)
		for _, m := range f.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			assert.ElementsMatch(t, want.labels, got, "labels of %s", name)
		}
	}

	def := map[string]string{"project_id": database.DefaultProjectID, "project_name": database.DefaultProjectName, "hostname": "node-a"}
	moved := func(name string, labels map[string]string) {
		t.Helper()
		assert.Positive(t, sum(fams[name], labels), "%s %v did not move", name, labels)
	}
	moved("yorkie_server_version", map[string]string{"server_version": "0.7.17-test"})
	pushPull := map[string]string{"rpc_type": "unary", "rpc_service": "yorkie.v1.YorkieService", "rpc_method": "PushPullChanges", "rpc_code": "ok", "hostname": "node-a"}
	moved("yorkie_rpc_server_handled_total", pushPull)
	moved("yorkie_rpc_server_handled_response_seconds", pushPull)
	moved("yorkie_rpc_server_handled_total", map[string]string{"rpc_type": "unary", "rpc_method": "PushPullChanges", "rpc_code": "failed_precondition"})
	moved("yorkie_rpc_server_handled_total", map[string]string{"rpc_service": "yorkie.v1.AdminService", "rpc_method": "GetServerVersion"})
	moved("yorkie_pushpull_response_seconds", nil)
	for _, name := range []string{"received_changes", "sent_changes", "received_operations", "sent_operations", "errors", "snapshot_bytes"} {
		moved("yorkie_pushpull_"+name+"_total", def)
	}
	moved("yorkie_pushpull_snapshot_duration_seconds", nil)
	moved("yorkie_stream_watch_document_stream_connections_total", def)
	moved("yorkie_stream_watch_document_events_total", map[string]string{"doc_event_type": "document-changed", "project_id": database.DefaultProjectID})
	moved("yorkie_stream_watch_document_events_total", map[string]string{"doc_event_type": "document-watched"})
	moved("yorkie_channel_total", def)
	moved("yorkie_channel_sessions_total", def)
	moved("yorkie_channel_sessions_top_n", map[string]string{"channel_key": "room.1"})
	moved("yorkie_user_agent_total", map[string]string{"sdk_type": "@yorkie-js-sdk", "sdk_version": "0.7.7",
		"grpc_method": "/yorkie.v1.YorkieService/AttachDocument", "project_name": database.DefaultProjectName})
	// Document events carry no payload in this protocol (as upstream's
	// changed, watched and unwatched events): the series is there at 0.
	assert.Contains(t, labelValues(fams["yorkie_stream_watch_document_event_payload_bytes_total"], "doc_event_type"), "document-changed")
	// The gauge of snapshot goroutines went up while one ran (the PushPull
	// started it) and shows its task type since.
	assert.Contains(t, labelValues(fams["yorkie_background_goroutines_total"], "task_type"), "snapshot")

	// The Watch stream closed is a connection less.
	watch.Close()
	aWatch.Close()
	poll.UntilTrue(t, 10*time.Second, "the closed Watch stream leaves the connection gauge", func() bool {
		return sum(scrape(t, srv)["yorkie_stream_watch_document_stream_connections_total"], def) == 0
	})
}

// labelValues lists the values a family's samples have for a label.
func labelValues(f *dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}
