package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
	etcdstore "github.com/yorkie-affinity/yorkie/server/sessionstore/etcd"
	mongostore "github.com/yorkie-affinity/yorkie/server/sessionstore/mongo"
	redisstore "github.com/yorkie-affinity/yorkie/server/sessionstore/redis"
)

// storeSettings are the flags that choose the session store.
type storeSettings struct {
	// kind is --session-store; "" picks mongo when a MongoDB is configured
	// (nodes on one database then form a cluster with nothing else), memory
	// otherwise.
	kind           string
	etcdEndpoints  string
	redisAddr      string
	keepOnReadOnly bool
	mongoURI       string
	mongoDatabase  string
	// node names this node in the refusal messages of other nodes.
	node string
}

// presencePrefix names the collections where every node on a MongoDB
// announces itself and its session store kind ("<kind>/<node>"), before it
// checks who else is there: of two nodes starting at once, at least one sees
// the other.
const presencePrefix = "session_presence_"

// presenceTTL is the lease of such an announcement.
const presenceTTL = 5 * time.Second

// errSharedDatabase refuses a start that would make two nodes each believe
// they own every document of one database.
var errSharedDatabase = errors.New("the database is shared")

// openSessionStore connects the session store the settings name; memory
// gives nil, which lets the server keep its own. The returned release ends
// what the start-up checks registered (nil when nothing).
func openSessionStore(ctx context.Context, st storeSettings, logger *slog.Logger) (sessionstore.Store, func(), error) {
	kind := st.kind
	if kind == "" {
		kind = "memory"
		if st.mongoURI != "" {
			kind = "mongo"
		}
		logger.Info("session store chosen", "session-store", kind)
	}
	switch kind {
	case "memory":
		if st.mongoURI == "" {
			return nil, nil, nil
		}
		release, err := announce(ctx, st, kind, logger)
		return nil, release, err
	case "mongo":
		if st.mongoURI == "" {
			return nil, nil, errors.New("--session-store mongo: no --mongo-connection-uri given")
		}
		release, err := announce(ctx, st, kind, logger)
		if err != nil {
			return nil, nil, err
		}
		s, err := mongostore.New(ctx, mongostore.Config{URI: st.mongoURI, Database: st.mongoDatabase, Logger: logger})
		if err != nil {
			release()
			return nil, nil, err
		}
		return s, release, nil
	case "etcd":
		s, err := etcdstore.New(etcdstore.Config{Endpoints: strings.Split(st.etcdEndpoints, ","), Logger: logger})
		return s, nil, err
	case "redis":
		s, err := redisstore.New(ctx, redisstore.Config{Addr: st.redisAddr, KeepConnOnReadOnly: st.keepOnReadOnly, Logger: logger})
		return s, nil, err
	}
	return nil, nil, fmt.Errorf("--session-store %q: want memory, etcd, redis or mongo", kind)
}

// announce registers this node and its store kind in the database's
// presence records and refuses to start while another live node there
// conflicts: any other node when this one has the memory store (each would
// believe it owns every document), a memory-store node when this one has
// the mongo store. A node that crashed leaves its record behind, and the
// mongo store declares it dead only after seeing it unchanged for its TTL,
// so a conflict is confirmed by watching the others for a TTL (and a fifth).
// The returned release ends the announcement.
func announce(ctx context.Context, st storeSettings, kind string, logger *slog.Logger) (func(), error) {
	presence, err := mongostore.New(ctx, mongostore.Config{URI: st.mongoURI, Database: st.mongoDatabase, Prefix: presencePrefix, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("check which nodes use the database: %w", err)
	}
	lease, err := presence.Register(ctx, kind+"/"+st.node, presenceTTL)
	if err != nil {
		_ = presence.Close()
		return nil, fmt.Errorf("announce this node in the database: %w", err)
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = lease.Revoke(ctx)
		_ = presence.Close()
	}
	conflicts := func(other string) bool { return kind == "memory" || strings.HasPrefix(other, "memory/") }
	deadline := time.Now().Add(presenceTTL + presenceTTL/5)
	for {
		ms, err := presence.Members(ctx)
		if err != nil {
			release()
			return nil, fmt.Errorf("check which nodes use the database: %w", err)
		}
		var others []string
		for _, m := range ms {
			if m != lease.Member() && conflicts(m.Addr) {
				others = append(others, m.Addr)
			}
		}
		if len(others) == 0 {
			return release, nil
		}
		if time.Now().After(deadline) {
			release()
			return nil, conflictError(kind, st.mongoDatabase, others)
		}
		select {
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// conflictError says which live nodes keep this one from starting.
func conflictError(kind, database string, others []string) error {
	slices.Sort(others)
	others = slices.Compact(others)
	if kind == "memory" {
		return fmt.Errorf("--session-store memory: %w: %s also use database %q, and a node with the memory store "+
			"believes it owns every document; nodes sharing a database need a shared session store: "+
			"leave --session-store unset (nodes on one MongoDB then share the mongo store) or choose mongo, etcd or redis",
			errSharedDatabase, strings.Join(others, ", "), database)
	}
	return fmt.Errorf("--session-store %s: %w: %s use database %q with --session-store memory and believe they own every document; "+
		"stop them, or start them without --session-store memory", kind, errSharedDatabase, strings.Join(others, ", "), database)
}
