package multiprocess_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
)

// members reads the number of members s sees (yorkie_affinity_members on
// its profiling port).
func (s *Server) members() (int, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://127.0.0.1:" + strconv.Itoa(s.ProfilingPort) + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "yorkie_affinity_members "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("%s: no yorkie_affinity_members in /metrics", s.Name)
}

// waitMembersSeen waits until every node sees all of them as members: a
// store that polls membership (the mongo store) shows a join up to one
// poll late, and a scenario that starts at once would meet the first
// re-placement.
func waitMembersSeen(t *testing.T, nodes []*Server) {
	t.Helper()
	poll.Until(t, time.Minute, "every node to see every node", func() error {
		for _, n := range nodes {
			got, err := n.members()
			if err != nil {
				return err
			}
			if got != len(nodes) {
				return fmt.Errorf("%s sees %d members, want %d", n.Name, got, len(nodes))
			}
		}
		return nil
	})
}
