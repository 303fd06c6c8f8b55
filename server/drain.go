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
	// warmTimeout bounds the call that has the next owner build a document.
	warmTimeout = 10 * time.Second
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

// handOff moves one binding to the next owner, drops the document's state
// here (ending its streams, which follow it) and has the next owner build
// it.
func (s *Server) handOff(ctx context.Context, mgr *affinity.Manager, key string) error {
	owner, err := mgr.HandOff(ctx, key)
	if err != nil {
		return err
	}
	if owner.Self {
		return fmt.Errorf("bound here again by another node")
	}
	pid, k := project.SplitScopedKey(key)
	if first, ok := channel.FromRoutingKey(k); ok {
		s.channels.Release(project.ScopedKey(pid, first), errHandedOff)
		return nil
	}
	ids := s.backend.DocumentIDs(pid, k)
	if err := s.backend.ReleaseKey(ctx, pid, k, errHandedOff); err != nil {
		return fmt.Errorf("release %q here: %w", key, err)
	}
	for _, id := range ids {
		req := connect.NewRequest(&clusterv1.GetDocumentSummaryRequest{
			ProjectId: pid, DocumentId: id, DocumentKey: k, IncludeRoot: true,
		})
		// Marked as forwarded from here: the next owner may still take
		// this node for the owner until it asks the store.
		req.Header().Set(routing.HeaderForwardedBy, mgr.Addr())
		wctx, cancel := context.WithTimeout(ctx, warmTimeout)
		_, err := s.peers.Cluster(owner.Addr).GetDocumentSummary(wctx, req)
		cancel()
		if err != nil {
			// The next owner builds it on the first call instead.
			s.logger.WarnContext(ctx, "next owner did not build the document", "binding", key, "owner", owner.Addr, "error", err)
		}
	}
	return nil
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
