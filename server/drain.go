package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/admin"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/routing"
)

const (
	// DefaultShutdownDrainTimeout is how long a shutdown spends handing
	// documents on before it releases the rest. Kubernetes' default grace
	// period (30 s) leaves room for it and for the calls in flight.
	DefaultShutdownDrainTimeout = 15 * time.Second
	// drainWorkers bounds the documents handed on at once.
	drainWorkers = 16
	// warmTimeout bounds the call that has the next owner build a document
	// or take a batch of channel sessions.
	warmTimeout = 10 * time.Second
	// channelSessionBatch is the most channel sessions handed on in one
	// call: at most about 300 bytes each (IDs and a 120-byte key), well
	// within the ClusterService's request bound.
	channelSessionBatch = 250
	// drainRetryDelay is the pause before a drain pass that follows one that
	// left documents behind (their handoff failed, or others bound documents
	// here meanwhile).
	drainRetryDelay = 100 * time.Millisecond
)

// errHandedOff is why the streams of a document this node handed on end;
// they go on at the next owner (see rpc's followWatch).
var errHandedOff = errors.New("this node handed the document on to its next owner")

// ErrDrainIncomplete: a drain ended (its bound ran out, or it was cut short)
// with documents still owned here; a shutdown releases them as it would
// without a drain.
var ErrDrainIncomplete = errors.New("drain ended with documents left")

// Drain hands every document this node owns on to its next owner and
// returns once it owns none, or when ctx ends (an error wrapping
// ErrDrainIncomplete). From its start the node reports draining (/healthz
// 503, gRPC health NOT_SERVING) so balancers send it no new calls, and it
// places no new document on itself. For each document, the binding moves to
// the next owner with a larger epoch (the database fences any late write
// here), the document's state here is dropped once the call in progress on
// it ends, its Watch streams go on at the next owner, and the next owner is
// asked to build the document before clients reach it. Calls that still
// arrive here are relayed to the new owners, in redirect mode too, and their
// answers carry the new owner's session key, so clients move before the node
// exits. A node that is not clustered has nothing to hand on.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	s.health.SetStatus(v1connect.YorkieServiceName, grpchealth.StatusNotServing)
	s.health.SetStatus("", grpchealth.StatusNotServing)
	mgr := s.Affinity()
	if mgr == nil {
		return nil
	}
	mgr.Drain()
	start := time.Now()
	moved := 0
	// handed are the keys handed on in this drain. One that comes back
	// (another draining node handed it here: nodes stopped together) is not
	// handed on again, or draining nodes would pass it back and forth; the
	// stop releases it.
	handed := map[string]bool{}
	for pass := 0; ; pass++ {
		var keys []string
		bounced := 0
		for _, k := range mgr.Owned() {
			if handed[k] {
				bounced++
				continue
			}
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			s.logger.InfoContext(ctx, "drain done", "handed_on", moved, "came_back", bounced, "passes", pass, "took", time.Since(start))
			return nil
		}
		if len(mgr.Members()) <= 1 {
			// No one to hand them to: stopping releases them.
			s.logger.InfoContext(ctx, "drain: no other member", "left", len(keys), "handed_on", moved)
			return nil
		}
		if pass > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(drainRetryDelay):
			}
		}
		if ctx.Err() != nil {
			s.logger.WarnContext(ctx, "drain ended with documents left", "left", len(keys), "handed_on", moved, "took", time.Since(start))
			return fmt.Errorf("server: %w: %d documents: %w", ErrDrainIncomplete, len(keys), ctx.Err())
		}
		moved += s.handOffAll(ctx, mgr, keys, handed)
	}
}

// handOffAll hands keys on, a few at a time, records in handed those that
// moved, and returns how many did.
func (s *Server) handOffAll(ctx context.Context, mgr *affinity.Manager, keys []string, handed map[string]bool) int {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		moved int
	)
	sem := make(chan struct{}, drainWorkers)
	for _, key := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return moved
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.handOff(ctx, mgr, key); err != nil {
				s.logger.DebugContext(ctx, "hand off", "binding", key, "error", err)
				return
			}
			mu.Lock()
			moved++
			handed[key] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	return moved
}

// handOff moves one binding to its next owner. The order, and why it keeps
// the fencing guarantees:
//
//  1. The successor builds (warms) each document under the key from the
//     database, claiming nothing, while this node still owns it and may
//     still write.
//  2. The binding moves to the successor with a larger epoch; new calls
//     route there from now on.
//  3. This node drops its state of the documents once the call in progress
//     on each ends; their Watch streams end and follow to the successor.
//     Calls that still reach this node are relayed.
//
// The successor serves a document only after a call routed to it with the
// new epoch has loaded it, and loading claims the document in the database
// with that epoch: a compare-and-set that refuses a claim older than the
// database's and, once done, refuses every write of an older epoch
// (ErrFenced). So each write of this node either landed before the claim,
// and the claim's head includes it, or is refused and was never
// acknowledged: the client sends it again, to the successor. This node
// stops writing, as far as the database takes writes, before the new epoch
// serves, whatever the timing of steps 2 and 3; step 3 only makes the stop
// early, so that normally no write is refused at all. The warm copy is the
// document at some head h0 no later than the claim's head h1: the load
// brings it forward through the stored changes h0+1..h1, which never
// change (a compaction rewrites the log, but it also bumps the document
// epoch, and a load drops a copy built at another document epoch). Nothing
// is acknowledged twice: the successor's load reconciles each client's
// client_seq with the log, so a change sent again after its
// acknowledgement here was lost is recognised as stored. A warm that fails,
// or that went to a member that does not get the binding after all, costs
// nothing but the build: the first call builds the document, as before.
//
// A channel group has no document: its sessions are copied to the successor
// after the binding moved (it refuses sessions of a group it does not own),
// and only then are they released here, so the Watch streams that follow
// find the channels' counts there unchanged. Attaches, detaches and
// refreshes go on meanwhile; none is lost or undone by the copy:
//
//   - One served here checks, under the channel manager's lock, that this
//     node still holds the binding (channel.Held). HandOff drops the
//     binding from this node's view before the copy takes that lock, so a
//     change is either in the copy or refused and routed again, within the
//     call, to the successor; none is made here after the copy, where the
//     release would drop it.
//   - One reaching the successor before the copy (routed there, relayed,
//     or a heartbeat) stands: the copy of a session its client attached or
//     refreshed there is skipped, and so is one detached there lately.
//
// Stopping the changes here is the simplest way to close the instant: a
// second copy (of what changed since the first) still needs the changes
// here stopped before the release, and once they are stopped one copy is
// complete; and routing a refused call again is the forward, through the
// path every relayed call takes.
func (s *Server) handOff(ctx context.Context, mgr *affinity.Manager, key string) error {
	next, err := mgr.Successor(key)
	if err != nil {
		return err
	}
	pid, k := project.SplitScopedKey(key)
	first, isChannel := channel.FromRoutingKey(k)
	var ids []string
	if !isChannel {
		ids = s.backend.DocumentIDs(pid, k)
		for _, id := range ids {
			s.warm(ctx, next, pid, id)
		}
	}
	owner, err := mgr.HandOff(ctx, key, next)
	if err != nil {
		return err
	}
	if owner.Self {
		return fmt.Errorf("bound here again by another node")
	}
	if isChannel {
		scoped := project.ScopedKey(pid, first)
		s.handChannelSessions(ctx, mgr, owner.Addr, pid, first, s.channels.GroupSessions(scoped))
		s.channels.Release(scoped, errHandedOff)
		return nil
	}
	if err := s.backend.ReleaseKey(ctx, pid, k, errHandedOff); err != nil {
		return fmt.Errorf("release %q here: %w", key, err)
	}
	if owner.Addr != next {
		// Another node bound it meanwhile: have that one build it.
		for _, id := range ids {
			s.warm(ctx, owner.Addr, pid, id)
		}
	}
	return nil
}

// warm has the node at addr build a document, bounded by warmTimeout. A
// failure is logged (a removed document's at debug level): the node builds
// it on the first call instead.
func (s *Server) warm(ctx context.Context, addr, pid, docID string) {
	req := connect.NewRequest(&clusterv1.WarmDocumentRequest{ProjectId: pid, DocumentId: docID})
	wctx, cancel := context.WithTimeout(ctx, warmTimeout)
	defer cancel()
	_, err := s.peers.Cluster(addr).WarmDocument(wctx, req)
	switch code := connect.CodeOf(err); {
	case err == nil:
	case code == connect.CodeNotFound, code == connect.CodeFailedPrecondition:
		// Removed (or gone): nothing will be served from it.
		s.logger.DebugContext(ctx, "next owner did not build the document", "document", docID, "owner", addr, "error", err)
	default:
		s.logger.WarnContext(ctx, "next owner did not build the document", "document", docID, "owner", addr, "error", err)
	}
}

// handChannelSessions gives the node at addr, which the channel group first
// moved to, the group's sessions, a batch per call. A failure is logged:
// the clients' heartbeats (every 30 s with the JS SDK) count them again
// there.
func (s *Server) handChannelSessions(ctx context.Context, mgr *affinity.Manager, addr, pid, first string, sessions []channel.HandedSession) {
	for len(sessions) > 0 {
		n := min(len(sessions), channelSessionBatch)
		batch := make([]*clusterv1.ChannelSession, 0, n)
		for _, cs := range sessions[:n] {
			_, key := project.SplitScopedKey(cs.Key)
			batch = append(batch, &clusterv1.ChannelSession{
				SessionId: cs.ID, ChannelKey: key, ClientId: cs.Client,
				AgeMs: cs.Age.Milliseconds(), TtlMs: cs.TTL.Milliseconds(),
			})
		}
		sessions = sessions[n:]
		req := connect.NewRequest(&clusterv1.ImportChannelSessionsRequest{ProjectId: pid, ChannelGroup: first, Sessions: batch})
		// Marked as forwarded from here: the next owner may still take this
		// node for the owner until it asks the store.
		req.Header().Set(routing.HeaderForwardedBy, mgr.Addr())
		wctx, cancel := context.WithTimeout(ctx, warmTimeout)
		_, err := s.peers.Cluster(addr).ImportChannelSessions(wctx, req)
		cancel()
		if err != nil {
			s.logger.WarnContext(ctx, "next owner did not take the channel sessions", "channel_group", first, "owner", addr, "sessions", len(batch), "error", err)
		}
	}
}

// drainOnShutdown runs the drain that begins a shutdown, bounded by
// Config.ShutdownDrainTimeout, ctx and SkipDrain, and reports whether it
// handed every document on.
func (s *Server) drainOnShutdown(ctx context.Context) bool {
	timeout := s.cfg.ShutdownDrainTimeout
	if timeout < 0 || s.Affinity() == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-s.drainCut:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.Drain(ctx); err != nil {
		s.logger.WarnContext(ctx, "releasing the documents the drain left", "error", err)
		return false
	}
	return true
}

// SkipDrain ends the drain of a shutdown in progress (or of one to come):
// the documents not handed on yet are released at once, as a shutdown
// without a drain does. A second SIGTERM calls it.
func (s *Server) SkipDrain() {
	s.drainCutOnce.Do(func() { close(s.drainCut) })
}

// drainHere drains this node, bounded by Config.ShutdownDrainTimeout (the
// ClusterService's Drain and DrainNode naming this node), and returns the
// documents it still owns.
func (s *Server) drainHere(ctx context.Context) (int, error) {
	if s.cfg.ShutdownDrainTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownDrainTimeout)
		defer cancel()
	}
	err := s.Drain(ctx)
	left := 0
	if mgr := s.Affinity(); mgr != nil {
		left = len(mgr.Owned())
	}
	if err != nil && !errors.Is(err, ErrDrainIncomplete) {
		return left, err
	}
	return left, nil
}

// drainer serves the AdminService's DrainNode: this node, or another member
// through the ClusterService.
type drainer struct{ s *Server }

func (d drainer) DrainNode(ctx context.Context, node string) (string, int, error) {
	mgr := d.s.Affinity()
	if mgr == nil {
		return "", 0, fmt.Errorf("drain: %w", admin.ErrNotClustered)
	}
	if node == "" || node == mgr.Addr() {
		left, err := d.s.drainHere(ctx)
		return mgr.Addr(), left, err
	}
	if !slices.Contains(mgr.Members(), node) {
		return "", 0, fmt.Errorf("drain %q: %w", node, admin.ErrUnknownNode)
	}
	resp, err := d.s.peers.Cluster(node).Drain(ctx, connect.NewRequest(&clusterv1.DrainRequest{}))
	if err != nil {
		return "", 0, fmt.Errorf("drain %s: %w", node, err)
	}
	return node, int(resp.Msg.GetDocumentsLeft()), nil
}
