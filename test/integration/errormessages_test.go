package integration_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/rpc/errinfo"
	"github.com/yorkie-affinity/yorkie/server/servertest"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
	"github.com/yorkie-affinity/yorkie/server/servertest/wire"
)

// wantSaidOnce fails t unless the message of the Connect error err names
// each subject exactly once and repeats no part of its context: every layer
// must add only what the one above it does not know.
func wantSaidOnce(t testing.TB, err error, subjects ...string) {
	t.Helper()
	var cerr *connect.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("got %T %v, want a connect error", err, err)
	}
	msg := cerr.Message()
	for _, s := range subjects {
		if n := strings.Count(msg, s); n != 1 {
			t.Errorf("message %q names %q %d times, want once", msg, s, n)
		}
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(msg, ": ") {
		if seen[part] {
			t.Errorf("message %q says %q twice", msg, part)
		}
		seen[part] = true
	}
}

// TestErrorMessagesSayEachThingOnce provokes the failures a client meets (an
// unknown client or document, a document it did not attach, a write fenced
// by a newer owner, a database that is down) and reads what the client is
// told: the code it acts on, and a message that names the subject once.
func TestErrorMessagesSayEachThingOnce(t *testing.T) {
	t.Run("unknown client", func(t *testing.T) {
		c := servertest.Client(t, servertest.Start(t), servertest.ConnectJSON)
		ctx := wire.Context(t)
		owner := attachedReplica(t, c)
		ghost := &wire.Replica{T: t, C: c, Client: sdksim.Client{ID: unknownClientID}, Seen: map[string]int{}}
		ghost.Actor, _ = hex.DecodeString(unknownClientID)

		key := wire.UniqueKey(t, "doc")
		_, err := ghost.Attach(ctx, key)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
		wantSaidOnce(t, err, unknownClientID, key)

		ghost.DocID, ghost.DocKey = owner.DocID, owner.DocKey
		_, err = ghost.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
		wantSaidOnce(t, err, unknownClientID)

		_, err = c.DeactivateClient(ctx, connect.NewRequest(&api.DeactivateClientRequest{ClientId: unknownClientID}))
		wantError(t, err, connect.CodeNotFound, errinfo.CodeClientNotFound)
		wantSaidOnce(t, err, unknownClientID)
	})

	t.Run("unknown document", func(t *testing.T) {
		c := servertest.Client(t, servertest.Start(t), servertest.ConnectJSON)
		ctx := wire.Context(t)
		r := attachedReplica(t, c)
		const unknownDocID = "0123456789abcdef01234567"
		r.DocID = unknownDocID
		_, err := r.PushPull(ctx)
		wantError(t, err, connect.CodeNotFound, errinfo.CodeDocumentNotFound)
		wantSaidOnce(t, err, unknownDocID)
	})

	t.Run("document not attached", func(t *testing.T) {
		c := servertest.Client(t, servertest.Start(t), servertest.ConnectJSON)
		ctx := wire.Context(t)
		a := attachedReplica(t, c)
		b := newReplica(t, c)
		b.DocID, b.DocKey = a.DocID, a.DocKey
		b.FailFast = false
		_, err := b.PushPull(ctx)
		wantError(t, err, connect.CodeFailedPrecondition, errinfo.CodeDocumentNotAttached)
		wantSaidOnce(t, err, b.ID)
	})

	t.Run("fenced write", func(t *testing.T) {
		// Two servers on one database, each believing it owns the document,
		// the second with the newer epoch: the first one's writes are fenced.
		db := memory.New()
		onDB := func(epoch int64) *server.Server {
			return servertest.StartWith(t, []server.Option{server.WithRouter(servertest.OwnerRouter(epoch))},
				func(cfg *server.Config) { cfg.DB = db })
		}
		ca := servertest.Client(t, onDB(1), servertest.ConnectJSON)
		cb := servertest.Client(t, onDB(2), servertest.ConnectJSON)
		ctx := wire.Context(t)
		old := attachedReplica(t, ca)
		newReplica(t, cb).MustAttach(old.DocKey)
		old.Edit(1)
		_, err := old.PushPull(ctx)
		wantError(t, err, connect.CodeUnavailable, errinfo.CodeUnavailable)
		wantSaidOnce(t, err, old.DocID)
	})

	t.Run("database down", func(t *testing.T) {
		db := &downDB{Database: memory.New()}
		c := servertest.Client(t, servertest.Start(t, func(cfg *server.Config) { cfg.DB = db }), servertest.ConnectJSON)
		// Back up before the server shuts down, which writes to it.
		t.Cleanup(func() { db.down.Store(false) })
		ctx := wire.Context(t)
		r := attachedReplica(t, c)
		db.down.Store(true)
		r.Edit(1)
		r.FailFast = false
		_, err := r.PushPull(ctx)
		wantError(t, err, connect.CodeUnavailable, errinfo.CodeUnavailable)
		wantSaidOnce(t, err, r.ID)

		_, err = c.ActivateClient(ctx, connect.NewRequest(&api.ActivateClientRequest{ClientKey: "client-of-a-down-server"}))
		wantError(t, err, connect.CodeUnavailable, errinfo.CodeUnavailable)
		wantSaidOnce(t, err, "client-of-a-down-server")
	})
}

// downDB is a database whose writes of changes and clients fail as an
// unreachable one's do while down is set.
type downDB struct {
	database.Database
	down atomic.Bool
}

// errDown is what downDB answers while it is down.
var errDown = fmt.Errorf("connection refused: %w", database.ErrUnavailable)

func (d *downDB) ActivateClient(ctx context.Context, projectID, key string, metadata map[string]string) (*database.ClientInfo, error) {
	if d.down.Load() {
		return nil, fmt.Errorf("activate client %q: %w", key, errDown)
	}
	return d.Database.ActivateClient(ctx, projectID, key, metadata)
}

func (d *downDB) AppendChanges(ctx context.Context, docID string, epoch int64, changes []*database.Change) error {
	if d.down.Load() {
		return fmt.Errorf("append changes to %q: %w", docID, errDown)
	}
	return d.Database.AppendChanges(ctx, docID, epoch, changes)
}
