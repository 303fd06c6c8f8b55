package multiprocess_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// KillsEnv sets how many owners TestKillToSync kills with each store. The
// default, 1, is the run CI makes: it shows that a SIGKILLed owner's
// documents move and every client converges. 20 gives the distribution the
// README reports:
//
//	go build -o bin/yorkie ./cmd/yorkie && (cd test/ferretdb && go build -o ../../bin/ferretdb .)
//	YORKIE_FERRETDB_BIN=$PWD/bin/ferretdb YORKIE_KILL_TO_SYNC_KILLS=20 \
//	  go test -count=1 -v -timeout 30m -run TestKillToSync ./test/multiprocess/
const KillsEnv = "YORKIE_KILL_TO_SYNC_KILLS"

// Shape of the workload: each document has clientsPerDoc writers, each
// talking to its own node, syncing every syncInterval as the JS SDK's sync
// loop ticks, with a new change every editEvery syncs (typing pace: the test
// database, FerretDB on SQLite, slows down as its collections grow, which
// would otherwise swamp what is measured), and retrying a failed sync
// retryDelay later, on the next live node (as a balancer would send it), as
// the SDK does.
const (
	killDocs       = 4
	clientsPerDoc  = 2
	syncInterval   = 50 * time.Millisecond
	editEvery      = 10
	retryDelay     = time.Second
	recoverTimeout = 30 * time.Second
)

// syncRecord is one sync a client made.
type syncRecord struct {
	started, ended time.Time
	ok             bool
}

// killClient is a writer of one document that follows the SDK's loop.
type killClient struct {
	r    *wire.Replica
	doc  int
	home int // the node a balancer sends it to while that node is up

	mu      sync.Mutex
	node    int // index of the node it talks to now
	owner   string
	syncs   []syncRecord
	lastErr error
}

func (c *killClient) snapshot() (node int, owner string, syncs []syncRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node, c.owner, slices.Clone(c.syncs)
}

// TestKillToSync SIGKILLs the owner of documents under editing load, with
// the etcd, the Redis and the mongo session store, and reports the time from each
// SIGKILL to each affected client's next successful sync (one whose owner
// was killed or whose node was). It checks that the documents move, that
// every client goes on syncing, and that the stored log of every document
// holds each acknowledged change exactly once with no gap. Times are logged,
// never asserted.
func TestKillToSync(t *testing.T) {
	kills := 1
	if v := os.Getenv(KillsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, KillsEnv)
		kills = n
	}
	for _, store := range []string{"etcd", "redis", "mongo"} {
		t.Run(store, func(t *testing.T) { runKillToSync(t, store, kills) })
	}
}

func runKillToSync(t *testing.T, store string, kills int) {
	var storeArgs []string
	switch store {
	case "etcd":
		storeArgs = []string{"--session-store", "etcd", "--etcd-endpoints", strings.Join(testenv.StartEtcd(t), ",")}
	case "redis":
		storeArgs = []string{"--session-store", "redis", "--redis-addr", testenv.StartRedis(t).Addr}
	case "mongo":
		// The nodes' own database, as upstream's Helm chart deploys them.
		storeArgs = []string{"--session-store", "mongo"}
	}
	uri, dbName := mongoDatabase(t)
	nodes := make([]*Server, 3)
	byAddr := map[string]int{}
	for i := range nodes {
		nodes[i] = StartServer(t, ServerOptions{Name: fmt.Sprintf("%s-%d", store, i), MongoURI: uri, MongoDatabase: dbName,
			Args: append([]string{"--node-ttl", "2s"}, storeArgs...)})
		byAddr[nodes[i].RPCAddr()] = i
	}
	waitMembersSeen(t, nodes)
	conns := make([]v1connect.YorkieServiceClient, len(nodes))
	for i, n := range nodes {
		conns[i] = n.Client(t)
	}
	nodeOf := func(addr string) int {
		if i, ok := byAddr[addr]; ok {
			return i
		}
		return -1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		liveMu sync.Mutex
		down   = map[int]bool{}
	)
	nextLive := func(from int) int {
		liveMu.Lock()
		defer liveMu.Unlock()
		for k := 1; k <= len(nodes); k++ {
			if i := (from + k) % len(nodes); !down[i] {
				return i
			}
		}
		return from
	}

	var clients []*killClient
	for d := range killDocs {
		key := fmt.Sprintf("kill-to-sync-%d", d)
		for j := range clientsPerDoc {
			n := (d + j) % len(nodes)
			r, err := wire.Activate(ctx, conns[n], fmt.Sprintf("%s-w%d", key, j))
			require.NoError(t, err)
			_, err = r.AttachWith(ctx, key, map[string]string{"name": fmt.Sprintf(`"w%d"`, j)})
			require.NoError(t, err, "attach %s through %s", key, nodes[n].Name)
			clients = append(clients, &killClient{r: r, doc: d, home: n, node: n})
		}
	}

	// rehomed counts the restarts after which every client goes back to its
	// home node, as a hashing balancer sends it there again once it is up.
	var rehomed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seen int64
			for i := 0; ctx.Err() == nil; i++ {
				if g := rehomed.Load(); g != seen {
					seen = g
					c.mu.Lock()
					c.node = c.home
					c.r.C = conns[c.home]
					c.mu.Unlock()
				}
				if i%editEvery == 0 {
					c.r.Edit(1)
				}
				start := time.Now()
				_, err := c.r.PushPull(ctx)
				c.mu.Lock()
				c.syncs = append(c.syncs, syncRecord{started: start, ended: time.Now(), ok: err == nil})
				if err == nil {
					if addr, perr := affinity.ParseSessionKey(c.r.Header.Get("x-session-key")); perr == nil {
						c.owner = addr
					}
				} else if ctx.Err() == nil {
					c.lastErr = err
				}
				c.mu.Unlock()
				wait := syncInterval
				if err != nil {
					c.mu.Lock()
					c.node = nextLive(c.node)
					c.r.C = conns[c.node]
					c.mu.Unlock()
					wait = retryDelay
				}
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}()
	}
	stopClients := func() {
		cancel()
		wg.Wait()
	}
	defer stopClients()

	var samples []time.Duration
	failed := 0 // syncs that failed around the kills
	for k := range kills {
		// Every client has synced since the last round: the owners are known.
		mark := time.Now()
		waitSynced(t, clients, mark)
		owned := map[int]int{}
		for _, c := range clients {
			_, owner, _ := c.snapshot()
			owned[nodeOf(owner)]++
		}
		victim := -1
		for i := range nodes {
			if victim < 0 || owned[i] > owned[victim] {
				victim = i
			}
		}
		var affected []*killClient
		for _, c := range clients {
			node, owner, _ := c.snapshot()
			if node == victim || nodeOf(owner) == victim {
				affected = append(affected, c)
			}
		}
		liveMu.Lock()
		down[victim] = true
		liveMu.Unlock()
		killed := time.Now()
		nodes[victim].Kill()

		var round []time.Duration
		deadline := time.Now().Add(recoverTimeout)
		for _, c := range affected {
			for {
				_, _, syncs := c.snapshot()
				if d, ok := firstSyncAfter(syncs, killed); ok {
					round = append(round, d)
					break
				}
				if time.Now().After(deadline) {
					c.mu.Lock()
					err := c.lastErr
					c.mu.Unlock()
					t.Fatalf("kill %d of %s: client %s has not synced %v after the kill (last error: %v)",
						k+1, nodes[victim].Name, c.r.Key, recoverTimeout, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		samples = append(samples, round...)
		for _, c := range clients {
			_, _, syncs := c.snapshot()
			for _, s := range syncs {
				if !s.ok && s.started.After(killed.Add(-time.Second)) {
					failed++
				}
			}
		}
		slices.Sort(round)
		t.Logf("%s kill %d: %s owned %d of %d clients' documents; kill-to-sync of %d affected clients: min %v max %v",
			store, k+1, nodes[victim].Name, owned[victim], len(clients), len(round),
			round[0].Round(time.Millisecond), round[len(round)-1].Round(time.Millisecond))

		// The documents moved: every affected client now syncs with a live owner.
		waitSynced(t, clients, time.Now())
		for _, c := range affected {
			_, owner, _ := c.snapshot()
			require.NotEqual(t, victim, nodeOf(owner), "client %s still reports the killed owner", c.r.Key)
		}
		nodes[victim].Restart(t)
		liveMu.Lock()
		down[victim] = false
		liveMu.Unlock()
		rehomed.Add(1)
	}
	stopClients()
	if len(samples) > 0 {
		slices.Sort(samples)
		t.Logf("%s: kill-to-sync over %d SIGKILLs, %d samples (%d failed syncs): p50 %v p99 %v max %v", store, kills, len(samples), failed,
			percentile(samples, 0.50).Round(time.Millisecond), percentile(samples, 0.99).Round(time.Millisecond),
			samples[len(samples)-1].Round(time.Millisecond))
	}
	checkKillLogs(t, uri, dbName, clients)
}

// waitSynced waits until every client has synced successfully after mark.
func waitSynced(t *testing.T, clients []*killClient, mark time.Time) {
	t.Helper()
	deadline := time.Now().Add(recoverTimeout)
	for _, c := range clients {
		for {
			_, _, syncs := c.snapshot()
			if _, ok := firstSyncAfter(syncs, mark); ok {
				break
			}
			if time.Now().After(deadline) {
				c.mu.Lock()
				err := c.lastErr
				c.mu.Unlock()
				t.Fatalf("client %s has not synced within %v (last error: %v)", c.r.Key, recoverTimeout, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// firstSyncAfter returns how long after t the first successful sync that
// started after t ended.
func firstSyncAfter(syncs []syncRecord, t time.Time) (time.Duration, bool) {
	for _, s := range syncs {
		if s.ok && s.started.After(t) {
			return s.ended.Sub(t), true
		}
	}
	return 0, false
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// checkKillLogs reads every document's stored log: server_seq runs 1..head
// with no gap, each client's changes appear once each in client_seq order,
// and every change a client had acknowledged is there.
func checkKillLogs(t *testing.T, uri, dbName string, clients []*killClient) {
	db := dialDatabase(t, uri, dbName)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	byDoc := map[string][]*killClient{}
	for _, c := range clients {
		byDoc[c.r.DocID] = append(byDoc[c.r.DocID], c)
	}
	for docID, cs := range byDoc {
		changes, err := db.FindChanges(ctx, docID, 1, math.MaxInt64)
		require.NoError(t, err)
		last := map[string]uint32{}
		for i, ch := range changes {
			require.Equal(t, int64(i+1), ch.ServerSeq, "document %s: server_seq gap or repeat", docID)
			require.Equal(t, last[ch.ActorID]+1, ch.ClientSeq, "document %s: client %s's changes out of order, missing or repeated", docID, ch.ActorID)
			last[ch.ActorID] = ch.ClientSeq
		}
		for _, c := range cs {
			require.GreaterOrEqual(t, last[c.r.ID], c.r.Acked, "document %s: client %s's acknowledged changes are not all stored", docID, c.r.ID)
		}
	}
}
