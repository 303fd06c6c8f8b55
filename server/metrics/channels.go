package metrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yorkie-affinity/yorkie/server/channel"
)

var (
	channelTotalDesc = prometheus.NewDesc("yorkie_channel_total",
		"Channels with sessions on this node, by project.",
		[]string{labelProjectID, labelProjectName, labelHostname}, nil)
	channelSessionsDesc = prometheus.NewDesc("yorkie_channel_sessions_total",
		"Channel sessions on this node, by project.",
		[]string{labelProjectID, labelProjectName, labelHostname}, nil)
	channelTopDesc = prometheus.NewDesc("yorkie_channel_sessions_top_n",
		"Sessions of the channels with the most sessions on this node.",
		[]string{labelChannelKey, labelProjectID, labelProjectName, labelHostname}, nil)
)

// channelCollector reads the channel gauges from the channel manager at
// scrape time, so they are never stale and cost nothing between scrapes.
type channelCollector struct {
	m    *Metrics
	list func() []channel.KeySessions
}

func (c *channelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- channelTotalDesc
	ch <- channelSessionsDesc
	ch <- channelTopDesc
}

func (c *channelCollector) Collect(ch chan<- prometheus.Metric) {
	if c.list == nil {
		return
	}
	all := c.list()
	type counts struct{ channels, sessions int }
	byProject := map[string]*counts{}
	live := all[:0:0]
	for _, cs := range all {
		if cs.Sessions <= 0 {
			continue
		}
		live = append(live, cs)
		pc := byProject[cs.ProjectID]
		if pc == nil {
			pc = &counts{}
			byProject[cs.ProjectID] = pc
		}
		pc.channels++
		pc.sessions += cs.Sessions
	}
	host := c.m.hostname
	for id, pc := range byProject {
		name := c.m.projectName(id)
		ch <- prometheus.MustNewConstMetric(channelTotalDesc, prometheus.GaugeValue, float64(pc.channels), id, name, host)
		ch <- prometheus.MustNewConstMetric(channelSessionsDesc, prometheus.GaugeValue, float64(pc.sessions), id, name, host)
	}
	slices.SortFunc(live, func(a, b channel.KeySessions) int {
		if n := cmp.Compare(b.Sessions, a.Sessions); n != 0 {
			return n
		}
		return cmp.Compare(a.Key, b.Key)
	})
	for _, cs := range live[:min(len(live), TopChannels)] {
		ch <- prometheus.MustNewConstMetric(channelTopDesc, prometheus.GaugeValue, float64(cs.Sessions),
			cs.Key, cs.ProjectID, c.m.projectName(cs.ProjectID), host)
	}
}
