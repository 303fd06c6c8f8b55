package server

import (
	"context"
	"errors"
	"fmt"
	"net"

	"connectrpc.com/connect"

	clusterv1 "github.com/yorkie-affinity/yorkie/api/yorkie/cluster/v1"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/routing"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	sessmemory "github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
)

// membership is the node's part in its cluster, which Start joins and
// Shutdown leaves.
type membership interface {
	// join registers the node and follows the membership.
	join(ctx context.Context) error
	// leave releases the node's bindings and lease.
	leave(ctx context.Context) error
	// abandon stops following the cluster and closes the session store
	// client without releasing anything, as a crash would.
	abandon()
	// close closes the peer connections and the session store if the
	// node made it.
	close() error
}

// joined is the membership of a node in a cluster through a session store.
type joined struct {
	mgr      *affinity.Manager
	router   *routing.Router
	peers    *routing.Peers
	store    sessionstore.Store
	ownStore bool
}

// staged is the membership of a node whose routing a test staged
// (WithRouter): it joins no cluster.
type staged struct{}

func (staged) join(context.Context) error  { return nil }
func (staged) leave(context.Context) error { return nil }
func (staged) abandon()                    {}
func (staged) close() error                { return nil }

// newCluster builds the node's membership: the session store (a memory
// store of its own when none is configured), the affinity manager under the
// advertised address, the peer connections and the router on them. It asks
// the store for the cluster secret unless the configuration names one.
func (s *Server) newCluster(ctx context.Context) (_ *joined, err error) {
	cfg := s.cfg
	j := &joined{store: cfg.SessionStore}
	if j.store == nil {
		j.store = sessmemory.New(sessmemory.Config{Logger: s.logger})
		j.ownStore = true
		if cfg.NodeTTL == 0 {
			// No other node shares this store, so none could take over: a short
			// lease would only let a CPU-starved process drop its own documents.
			cfg.NodeTTL = soloNodeTTL
		}
	}
	defer func() {
		if err != nil {
			_ = j.close()
		}
	}()
	advertise := cfg.AdvertiseAddr
	if advertise == "" {
		_, port, err := net.SplitHostPort(s.rpcAddr)
		if err != nil {
			return nil, fmt.Errorf("server: bound address %q: %w", s.rpcAddr, err)
		}
		advertise = net.JoinHostPort("127.0.0.1", port)
	}
	secret := cfg.ClusterSecret
	if secret == "" {
		if secret, err = j.store.ClusterSecret(ctx); err != nil {
			return nil, fmt.Errorf("server: cluster secret: %w", err)
		}
	}
	if j.mgr, err = affinity.New(affinity.Config{
		Store:         j.store,
		AdvertiseAddr: advertise,
		TTL:           cfg.NodeTTL,
		// Crashed peers are found by heartbeats and refused relays, not
		// only when their leases run out (affinity/suspect.go).
		HeartbeatInterval: affinity.HeartbeatFor(cfg.NodeTTL),
		// Another member confirms an eviction first, so a member cut off
		// from this node only is not evicted (peers is set below, before
		// the manager starts).
		Witness: func(ctx context.Context, witness, addr string) (bool, error) {
			resp, err := j.peers.Cluster(witness).Reach(ctx, connect.NewRequest(&clusterv1.ReachRequest{Member: addr}))
			if err != nil {
				return false, fmt.Errorf("witness %s: %w", witness, err)
			}
			return resp.Msg.GetReached(), nil
		},
		OnLost:     routing.Lost(s.backend, s.channels, 0, s.logger),
		Logger:     s.logger,
		Registerer: s.registry,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	j.peers = routing.NewPeers(routing.PeersConfig{Secret: secret, Self: advertise, TLS: s.peerTLS})
	if j.router, err = routing.New(routing.Config{
		Owners:     j.mgr,
		Peers:      j.peers,
		Backend:    s.backend,
		Channels:   s.channels,
		Mode:       cfg.AffinityMode,
		Header:     cfg.SessionKeyHeader,
		Secret:     secret,
		Logger:     s.logger,
		Registerer: s.registry,
	}); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return j, nil
}

func (j *joined) join(ctx context.Context) error {
	if err := j.mgr.Start(ctx); err != nil {
		return fmt.Errorf("server: join cluster: %w", err)
	}
	return nil
}

func (j *joined) leave(ctx context.Context) error {
	if err := j.mgr.Stop(ctx); err != nil {
		return fmt.Errorf("leave cluster: %w", err)
	}
	return nil
}

func (j *joined) abandon() {
	j.mgr.Abandon()
	// Even a store the node was given is closed: its lease then runs out.
	_ = j.store.Close()
	j.peers.Close()
}

func (j *joined) close() error {
	if j.peers != nil {
		j.peers.Close()
	}
	if !j.ownStore {
		return nil
	}
	if err := j.store.Close(); err != nil {
		return fmt.Errorf("close session store: %w", err)
	}
	return nil
}

// errAlreadyStarted: Start was called twice.
var errAlreadyStarted = errors.New("server: already started")
