package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/servertest/poll"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// failoverProxy stands in for a Kubernetes Service in front of Redis: new
// connections go to the current backend, established ones stay with the
// backend they were opened to, even after Repoint.
type failoverProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	backend  string
	accepted map[string]int
	conns    []net.Conn
	closed   bool
	wg       sync.WaitGroup
}

func startFailoverProxy(t *testing.T, backend string) *failoverProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &failoverProxy{ln: ln, backend: backend, accepted: map[string]int{}}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *failoverProxy) Addr() string { return p.ln.Addr().String() }

// Repoint sends connections accepted from now on to backend.
func (p *failoverProxy) Repoint(backend string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backend = backend
}

// Accepted is the number of client connections sent to backend so far.
func (p *failoverProxy) Accepted(backend string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted[backend]
}

func (p *failoverProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backend
		p.accepted[backend]++
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, backend) })
	}
}

// track remembers c for close; it returns false if the proxy is closed.
func (p *failoverProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

func (p *failoverProxy) pipe(client net.Conn, backend string) {
	defer client.Close()
	if !p.track(client) {
		return
	}
	server, err := net.DialTimeout("tcp", backend, 2*time.Second)
	if err != nil {
		return
	}
	defer server.Close()
	if !p.track(server) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

func (p *failoverProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// waitReplicated waits until key exists on replica.
func waitReplicated(t *testing.T, replica *testenv.Redis, key string) {
	t.Helper()
	poll.UntilTrue(t, 10*time.Second, "registration "+key+" replicated", func() bool {
		return replica.MustCommand(t, "EXISTS", key) == "1"
	})
}

// waitReplicaSynced waits until replica reports its link to the master up.
func waitReplicaSynced(t *testing.T, replica *testenv.Redis) {
	t.Helper()
	poll.Until(t, 10*time.Second, "replica "+replica.Addr+" synced", func() error {
		if info := replica.MustCommand(t, "INFO", "replication"); !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replication info:\n%s", info)
		}
		return nil
	})
}

// failoverRun is what one failover run observed.
type failoverRun struct {
	before       int64 // failed operations before the failover
	after        int64 // failed operations from the failover on
	oldConns     int   // connections the proxy sent to the old master
	newConns     int   // connections the proxy sent to the new master
	recovered    bool  // every worker reached the run of successes
	tailFailures int   // failures among each worker's last tailOps operations
	tailOps      int
	errs         map[string]int // kinds of errors seen after the failover
	staleReads   int64          // resolves that missed a binding the worker had made
}

const (
	failoverWorkers = 8
	failoverPool    = 4
	// recoveredAfter is the run of successes per worker that counts as recovered.
	recoveredAfter = 150
)

// runFailover runs store writes on several goroutines through a proxy to a
// master, fails the master over to its replica mid-run and repoints the proxy.
func runFailover(t *testing.T, viaWithConn, keepConn bool) failoverRun {
	master := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	waitReplicaSynced(t, replica)
	proxy := startFailoverProxy(t, master.Addr)

	s := newTestStore(t, proxy.Addr(), Config{PoolSize: failoverPool, KeepConnOnReadOnly: keepConn})
	s.viaWithConn = viaWithConn
	ctx := ctxT(t)
	const ttl = 30 * time.Second
	lease, err := s.Register(ctx, "owner:1", ttl)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	owner := lease.Member()
	// The owner's registration must be on the replica before it takes over.
	memberKey := s.memberKey(owner)
	waitReplicated(t, replica, memberKey)

	var (
		switched   atomic.Bool
		staleReads atomic.Int64
		before     atomic.Int64
		after      atomic.Int64
		done       [failoverWorkers]atomic.Int64 // operations after the switch
		streak     [failoverWorkers]atomic.Int64 // successes since the last failure
		errKindsMu sync.Mutex
		errKinds   = map[string]int{}
		results    [failoverWorkers][]bool // per worker, after the switch
	)
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	var workers sync.WaitGroup
	for w := range failoverWorkers {
		workers.Go(func() {
			ops := []func(ctx context.Context, i int) error{
				func(ctx context.Context, i int) error {
					_, err := s.Bind(ctx, fmt.Sprintf("doc-%d-%d", w, i), owner)
					return err
				},
				func(ctx context.Context, i int) error {
					ok, err := s.renew(ctx, owner, ttl)
					if err == nil && !ok {
						return errors.New("renew: lease lost")
					}
					return err
				},
				func(ctx context.Context, i int) error {
					_, ok, err := s.Resolve(ctx, fmt.Sprintf("doc-%d-%d", w, i))
					if err == nil && !ok && switched.Load() {
						// Not a failed call: the binding was written to the
						// old master after the replica's promotion (and then
						// discarded), or read from the old master before it
						// had resynchronised. See the package doc.
						staleReads.Add(1)
					}
					return err
				},
			}
			for i := 0; runCtx.Err() == nil; i++ {
				for _, op := range ops {
					opCtx, cancel := context.WithTimeout(runCtx, 2*time.Second)
					err := op(opCtx, i)
					cancel()
					if runCtx.Err() != nil {
						return
					}
					if !switched.Load() {
						if err != nil {
							before.Add(1)
						}
						continue
					}
					results[w] = append(results[w], err == nil)
					done[w].Add(1)
					if err == nil {
						streak[w].Add(1)
						continue
					}
					after.Add(1)
					streak[w].Store(0)
					// Pause like a client retrying after an error would, rather
					// than spin on the connections the pool is replacing.
					time.Sleep(2 * time.Millisecond)
					kind := "other: " + err.Error()
					var ro *ReadOnlyError
					switch {
					case errors.As(err, &ro):
						kind = "READONLY (connection discarded)"
					case errors.Is(err, errConnDiscarded):
						kind = "pipelined behind READONLY"
					case strings.Contains(err.Error(), "LOADING"):
						// A read reached the old master while it reloaded
						// its data from the new one.
						kind = "LOADING"
					case strings.Contains(err.Error(), "READONLY"):
						kind = "READONLY"
					case errors.Is(err, sessionstore.ErrUnavailable):
						kind = "unavailable: " + err.Error()
					}
					errKindsMu.Lock()
					errKinds[kind]++
					errKindsMu.Unlock()
				}
			}
		})
	}
	waitFor := func(d time.Duration, cond func() bool) bool {
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(5 * time.Millisecond)
		}
		return true
	}
	// Wait until the pool has all its connections open to the master.
	if !waitFor(10*time.Second, func() bool { return proxy.Accepted(master.Addr) >= failoverPool }) {
		t.Fatalf("pool did not open %d connections", failoverPool)
	}

	// Fail over: promote the replica, send new connections to it, demote the
	// old master. Established connections stay with the old master.
	switched.Store(true)
	replica.MustCommand(t, "REPLICAOF", "NO", "ONE")
	proxy.Repoint(replica.Addr)
	master.MustCommand(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(replica.Port))

	// The waits below are hang guards: each ends as soon as the workers got
	// there, and what is asserted is what the workers saw, not when.
	const settle = 60 * time.Second
	run := failoverRun{errs: errKinds}
	if keepConn {
		waitFor(settle, func() bool {
			for w := range failoverWorkers {
				if done[w].Load() < recoveredAfter {
					return false
				}
			}
			return true
		})
	} else {
		run.recovered = waitFor(settle, func() bool {
			for w := range failoverWorkers {
				if streak[w].Load() < recoveredAfter {
					return false
				}
			}
			return true
		})
	}
	stop()
	workers.Wait()

	run.before, run.after, run.staleReads = before.Load(), after.Load(), staleReads.Load()
	run.oldConns, run.newConns = proxy.Accepted(master.Addr), proxy.Accepted(replica.Addr)
	run.tailOps = recoveredAfter / 2
	for w := range failoverWorkers {
		tail := results[w][max(len(results[w])-run.tailOps, 0):]
		for _, ok := range tail {
			if !ok {
				run.tailFailures++
			}
		}
	}
	run.tailOps *= failoverWorkers
	return run
}

// TestFailoverRecovery fails a master over behind a proxy while several
// goroutines write, on the pool's shared path and on its exclusive
// (WithConn) path. With the READONLY recovery each connection that was open
// to the old master fails at most the commands it carried when the server
// answered READONLY, then every operation succeeds against the new master;
// without it, writes keep failing.
func TestFailoverRecovery(t *testing.T) {
	for _, path := range []struct {
		name        string
		viaWithConn bool
		// perConn bounds the failed operations per connection to the old
		// master: on the shared path the commands pipelined behind the one
		// that met READONLY fail too; on the exclusive path a connection
		// carries one command at a time.
		perConn int
	}{
		{"shared", false, failoverWorkers},
		{"WithConn", true, 1},
	} {
		t.Run(path.name, func(t *testing.T) {
			fixed := runFailover(t, path.viaWithConn, false)
			t.Logf("with READONLY recovery: %d failed operations after the failover (%d before), "+
				"%d connections to the old master, %d to the new, %d stale reads; errors %v",
				fixed.after, fixed.before, fixed.oldConns, fixed.newConns, fixed.staleReads, fixed.errs)
			unfixed := runFailover(t, path.viaWithConn, true)
			t.Logf("without (KeepConnOnReadOnly): %d failed operations after the failover (%d before), "+
				"%d of the last %d failed, %d connections to the old master, %d to the new",
				unfixed.after, unfixed.before, unfixed.tailFailures, unfixed.tailOps, unfixed.oldConns, unfixed.newConns)

			if fixed.before != 0 || unfixed.before != 0 {
				t.Errorf("operations failed before the failover: %d with recovery, %d without", fixed.before, unfixed.before)
			}
			if !fixed.recovered {
				t.Errorf("with recovery, not every worker reached %d successes in a row (gave up after a minute)", recoveredAfter)
			}
			readOnly := int64(fixed.errs["READONLY (connection discarded)"] + fixed.errs["pipelined behind READONLY"])
			if bound := int64(fixed.oldConns * path.perConn); readOnly > bound {
				t.Errorf("with recovery, %d operations failed for READONLY after the failover, want at most %d (%d per connection to the old master)",
					readOnly, bound, path.perConn)
			}
			if other := fixed.after - readOnly - int64(fixed.errs["LOADING"]); other != 0 {
				t.Errorf("with recovery, %d failures were caused by neither READONLY nor the old master's reload: %v", other, fixed.errs)
			}
			if fixed.tailFailures != 0 {
				t.Errorf("with recovery, %d of the last %d operations failed", fixed.tailFailures, fixed.tailOps)
			}
			if fixed.newConns == 0 {
				t.Errorf("with recovery, the pool never dialled the new master")
			}
			// Without recovery every write keeps failing: two of the three
			// operations of each round write.
			if unfixed.tailFailures < unfixed.tailOps/2 {
				t.Errorf("without recovery only %d of the last %d operations failed; the stale connections were expected to keep failing writes",
					unfixed.tailFailures, unfixed.tailOps)
			}
		})
	}
}

// TestLeaseSurvivesFailover: after a failover every pooled connection is
// stale, and each renewal that meets READONLY uses one up. The lease must
// still be renewed within its TTL, so a failover alone never costs a node
// its documents.
func TestLeaseSurvivesFailover(t *testing.T) {
	master := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	waitReplicaSynced(t, replica)
	proxy := startFailoverProxy(t, master.Addr)
	s := newTestStore(t, proxy.Addr(), Config{PoolSize: failoverPool})
	s.viaWithConn = true // every command takes a pooled connection of its own
	ctx := ctxT(t)

	// A renewal comes every third of the TTL; 3 s leaves a busy machine 2 s
	// of slack per renewal, so only the failover can end the lease.
	const ttl = 3 * time.Second
	lease, err := s.Register(ctx, "owner:1", ttl)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	// Fill the pool with connections to the master that is about to go.
	var warm sync.WaitGroup
	for i := range failoverPool * 4 {
		warm.Go(func() { _, _, _ = s.Resolve(ctx, fmt.Sprintf("warm-%d", i)) })
	}
	warm.Wait()
	memberKey := s.memberKey(lease.Member())
	waitReplicated(t, replica, memberKey)

	replica.MustCommand(t, "REPLICAOF", "NO", "ONE")
	proxy.Repoint(replica.Addr)
	master.MustCommand(t, "REPLICAOF", "127.0.0.1", strconv.Itoa(replica.Port))

	select {
	case <-lease.Done():
		t.Fatalf("lease lost in the failover (TTL %v, pool of %d)", ttl, failoverPool)
	case <-time.After(3 * ttl):
	}
	if replica.MustCommand(t, "EXISTS", memberKey) != "1" {
		t.Fatalf("the member key is not on the new master")
	}
}
