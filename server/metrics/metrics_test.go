package metrics

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserAgentBounded: the user agent header comes from clients, so made-up
// values cannot grow the registry without end.
func TestUserAgentBounded(t *testing.T) {
	m, err := New(Config{Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	for i := range 3 * maxUserAgents {
		h := http.Header{}
		h.Set(UserAgentHeader, fmt.Sprintf("sdk/%d", i))
		m.UserAgent(h, nil, "/yorkie.v1.YorkieService/PushPullChanges")
	}
	long := http.Header{}
	long.Set(UserAgentHeader, "sdk/"+string(make([]byte, 2*maxUserAgentLen)))
	m.UserAgent(long, nil, "/yorkie.v1.YorkieService/PushPullChanges")
	assert.Equal(t, maxUserAgents+1, testutil.CollectAndCount(m.userAgents))
	assert.Equal(t, float64(2*maxUserAgents+1), testutil.ToFloat64(m.userAgents.WithLabelValues(
		"other", "other", "/yorkie.v1.YorkieService/PushPullChanges", "000000000000000000000000", "default", "")))
}

// TestRequiresRegisterer: New refuses a missing registerer.
func TestRequiresRegisterer(t *testing.T) {
	_, err := New(Config{})
	require.Error(t, err)
}

// TestNilRecordsNothing: a nil *Metrics is safe to call.
func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.Handled(Unary, "/a/b", nil, 0)
	m.UserAgent(http.Header{}, nil, "/a/b")
	m.PushPull(nil, Pack{}, 0, nil)
	m.WatchEvent(nil, "document-changed", 0)
	m.WatchOpened(nil)()
	assert.Nil(t, m.SnapshotSeconds())
	assert.Nil(t, m.Background("x"))
}
