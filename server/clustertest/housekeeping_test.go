package clustertest_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/clustertest"
	"github.com/yorkie-affinity/yorkie/server/housekeeping"
	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// vvKey is the replica's key in version vectors.
func vvKey(r *wire.Replica) string { return base64.StdEncoding.EncodeToString(r.Actor) }

// pushPullVV runs r's PushPull reporting the version vector vv and returns
// the minimum synced version vector of the answer.
func pushPullVV(t *testing.T, r *wire.Replica, vv map[string]int64) map[string]int64 {
	t.Helper()
	req := r.PushPullRequest()
	req.Msg.ChangePack.VersionVector = &api.VersionVector{Vector: vv}
	resp, err := r.C.PushPullChanges(wire.Context(t), req)
	wire.Must(t, err, "pushpull of "+r.ID)
	wire.Must(t, r.Absorb(resp.Msg.GetChangePack()), "absorb")
	return resp.Msg.GetChangePack().GetVersionVector().GetVector()
}

// memberOf returns the live registration of node n in the shared store.
func memberOf(t *testing.T, c *clustertest.Cluster, n *clustertest.Node) sessionstore.Member {
	t.Helper()
	ms, err := c.Store().Members(wire.Context(t))
	wire.Must(t, err, "members")
	for _, m := range ms {
		if m.Addr == n.Addr() {
			return m
		}
	}
	t.Fatalf("node %d (%s) is not a live member", n.Index(), n.Addr())
	return sessionstore.Member{}
}

// runLog records the housekeeping runs of every node, in order.
type runLog struct {
	mu   sync.Mutex
	runs []nodeRun
	more chan struct{} // signalled after every run
}

type nodeRun struct {
	node int
	led  bool
}

func newRunLog() *runLog { return &runLog{more: make(chan struct{}, 1)} }

func (l *runLog) record(node int, r housekeeping.Report) {
	l.mu.Lock()
	l.runs = append(l.runs, nodeRun{node: node, led: r.Led})
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
}

// waitFor waits until cond holds over the runs recorded from index from on,
// and returns that many runs.
func (l *runLog) waitFor(t *testing.T, what string, from int, cond func([]nodeRun) bool) []nodeRun {
	t.Helper()
	deadline := time.After(clustertest.WaitTimeout)
	for {
		l.mu.Lock()
		runs := append([]nodeRun(nil), l.runs[from:]...)
		l.mu.Unlock()
		if cond(runs) {
			return runs
		}
		select {
		case <-l.more:
		case <-deadline:
			t.Fatalf("%s: not within %s; runs: %+v", what, clustertest.WaitTimeout, runs)
		}
	}
}

func (l *runLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs)
}

// everyNodeRan holds once each of the nodes reported at least n runs.
func everyNodeRan(nodes []int, n int) func([]nodeRun) bool {
	return func(runs []nodeRun) bool {
		count := map[int]int{}
		for _, r := range runs {
			count[r.node]++
		}
		for _, i := range nodes {
			if count[i] < n {
				return false
			}
		}
		return true
	}
}

// leaders returns the nodes that scanned in runs.
func leaders(runs []nodeRun) map[int]int {
	out := map[int]int{}
	for _, r := range runs {
		if r.led {
			out[r.node]++
		}
	}
	return out
}

// TestHousekeepingRunsOnOneNodeAtATime runs housekeeping every few
// milliseconds on three nodes: exactly one of them holds the role in the
// session store and scans, the others only record activity; when it shuts
// down, exactly one of the two others takes over.
func TestHousekeepingRunsOnOneNodeAtATime(t *testing.T) {
	log := newRunLog()
	// A long lease: a CPU-starved node must not lose the role by a stall;
	// the handover below goes through a graceful shutdown.
	c := clustertest.Start(t, 3, clustertest.WithNodeTTL(time.Minute), clustertest.WithConfig(func(_ int, cfg *server.Config) {
		cfg.HousekeepingInterval = 5 * time.Millisecond
	}), clustertest.WithSeams(func(i int) []server.Option {
		return []server.Option{server.WithHousekeepingReports(func(r housekeeping.Report) { log.record(i, r) })}
	}))

	runs := log.waitFor(t, "five runs on every node", 0, everyNodeRan([]int{0, 1, 2}, 5))
	led := leaders(runs)
	if len(led) != 1 {
		t.Fatalf("nodes that scanned: %v; want exactly one", led)
	}
	var leader int
	for i := range led {
		leader = i
	}
	// The session store names that node as the role's holder, whichever
	// node asks.
	holder := memberOf(t, c, c.Node(leader))
	for _, n := range c.Nodes() {
		got, err := c.Store().Claim(wire.Context(t), housekeeping.RoleName, memberOf(t, c, n))
		wire.Must(t, err, "claim")
		if got != holder {
			t.Fatalf("claim by node %d answered holder %+v; want node %d's %+v", n.Index(), got, leader, holder)
		}
	}

	c.Stop(leader)
	var rest []int
	for _, n := range c.Running() {
		rest = append(rest, n.Index())
	}
	from := log.len()
	after := log.waitFor(t, "five runs on each remaining node", from, func(runs []nodeRun) bool {
		return len(leaders(runs)) > 0 && everyNodeRan(rest, 5)(runs)
	})
	led = leaders(after)
	if _, again := led[leader]; again || len(led) != 1 {
		t.Fatalf("nodes that scanned after node %d stopped: %v; want exactly one other", leader, led)
	}
	for next := range led {
		if got := memberOf(t, c, c.Node(next)); got != mustHolder(t, c, c.Node(rest[0])) {
			t.Fatalf("the store names %+v as holder, but node %d scanned", got, next)
		}
	}
}

// mustHolder asks the store who holds the housekeeping role, as node n.
func mustHolder(t *testing.T, c *clustertest.Cluster, n *clustertest.Node) sessionstore.Member {
	t.Helper()
	got, err := c.Store().Claim(wire.Context(t), housekeeping.RoleName, memberOf(t, c, n))
	wire.Must(t, err, "claim")
	return got
}

// TestHousekeepingDetachesAtTheOwner leaves one of two clients of a
// document silent past the threshold and runs housekeeping on the node that
// does not own the document: the silent client is deactivated, the owner
// detaches it (its presence is cleared for the other client), and the
// minimum synced version vector the other client gets rises to its own.
func TestHousekeepingDetachesAtTheOwner(t *testing.T) {
	clock := &testclock.Clock{}
	c := clustertest.Start(t, 2, clustertest.WithNodeTTL(time.Minute), clustertest.WithConfig(func(_ int, cfg *server.Config) {
		cfg.ClientDeactivateThreshold = time.Second
		cfg.HousekeepingInterval = time.Hour // runs only when the test says
	}), clustertest.WithSeams(func(int) []server.Option { return []server.Option{server.WithClock(clock.Now)} }))
	docKey := wire.UniqueKey(t, "doc")
	idle := newReplicaOn(t, c.Node(0))
	idle.MustAttach(docKey)
	owner := ownerOf(t, c, docKey).Node
	other := otherNodes(c, owner)[0]
	active := newReplicaOn(t, owner)
	active.MustAttach(docKey)

	// The idle client edits once; the active one pulls that, edits three
	// times and reports seeing all of it. The idle client's vector, which
	// lacks the active client, holds the minimum of the active one at 0.
	idle.Edit(1)
	pushPullVV(t, idle, map[string]int64{vvKey(idle): idle.Lamport})
	active.MustPushPull()
	active.Edit(3)
	vv := map[string]int64{vvKey(idle): idle.Lamport, vvKey(active): active.Lamport}
	if got := pushPullVV(t, active, vv)[vvKey(active)]; got != 0 {
		t.Fatalf("minimum synced vector names the active client at %d; want 0 while the idle client lags", got)
	}

	// Nobody is silent yet: a run deactivates nobody. Both nodes run, so
	// each writes the activity it saw (the owner saw every call).
	r := other.Server().Housekeeper().RunOnce(wire.Context(t))
	if r.Err != nil || !r.Led || len(r.Candidates) != 0 {
		t.Fatalf("first run = %+v; want it to lead and find nobody", r)
	}
	if r := owner.Server().Housekeeper().RunOnce(wire.Context(t)); r.Err != nil || r.Led || r.Touched == 0 {
		t.Fatalf("first run on the owner = %+v; want it to record activity and not lead", r)
	}

	clock.Advance(3 * time.Hour)
	active.MustPushPull() // the active client calls after the pause
	if r := owner.Server().Housekeeper().RunOnce(wire.Context(t)); r.Err != nil || r.Touched != 1 {
		t.Fatalf("run on the owner after the pause = %+v; want it to record the active client", r)
	}
	r = other.Server().Housekeeper().RunOnce(wire.Context(t))
	if r.Err != nil || !r.Led || r.Deactivated != 1 || len(r.Candidates) != 1 || r.Candidates[0] != idle.ID {
		t.Fatalf("run after the pause = %+v; want only %s deactivated", r, idle.ID)
	}

	info, err := c.DB().FindClient(wire.Context(t), database.DefaultProjectID, idle.ID)
	wire.Must(t, err, "find idle client")
	if info.Status != database.ClientDeactivated {
		t.Fatalf("idle client is %s, want deactivated", info.Status)
	}
	if atts, err := c.DB().ListClientAttachments(wire.Context(t), idle.ID); err != nil || len(atts) != 0 {
		t.Fatalf("idle client's attachments = %v, %v; want none", atts, err)
	}
	if info, err := c.DB().FindClient(wire.Context(t), database.DefaultProjectID, active.ID); err != nil || info.Status != database.ClientActivated {
		t.Fatalf("active client = %+v, %v; want it still activated", info, err)
	}

	// The owner stored the idle client's presence clear and forgot its
	// vector, so the active client's minimum becomes its own vector.
	poll.Until(t, wire.WaitTimeout, "the minimum synced vector rising", func() error {
		got := pushPullVV(t, active, vv)
		if got[vvKey(active)] != active.Lamport {
			return fmt.Errorf("minimum synced vector %v names the active client at %d, want %d", got, got[vvKey(active)], active.Lamport)
		}
		return nil
	})
	cleared := false
	for _, ch := range active.Pulled {
		if string(ch.GetId().GetActorId()) == string(idle.Actor) && ch.GetPresenceChange().GetType() == api.PresenceChange_CHANGE_TYPE_CLEAR {
			cleared = true
		}
	}
	if !cleared {
		t.Fatalf("the active client never pulled the idle client's presence clear")
	}

	// The idle client, back, is told it was deactivated (the SDK then
	// deactivates itself), wherever its call lands.
	for _, n := range c.Nodes() {
		idle.C = n.ConnectJSON()
		_, err := idle.PushPull(wire.Context(t))
		var cerr *connect.Error
		if !errors.As(err, &cerr) || wire.ErrorInfo(cerr)["code"] != "ErrClientNotActivated" {
			t.Fatalf("PushPull of the deactivated client through node %d = %v; want ErrClientNotActivated", n.Index(), err)
		}
	}
}

// newReplicaOn activates a client through node n's Connect JSON port.
func newReplicaOn(t *testing.T, n *clustertest.Node) *wire.Replica {
	t.Helper()
	r := wire.NewReplica(t, n.ConnectJSON())
	r.FailFast = true
	return r
}
