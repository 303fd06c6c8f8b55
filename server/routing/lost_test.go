package routing_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/affinity"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/channel"
	"github.com/yorkie-affinity/yorkie/server/routing"
	sessmemory "github.com/yorkie-affinity/yorkie/server/sessionstore/memory"
	"github.com/yorkie-affinity/yorkie/server/sessionstore/storetest"
)

// waitTimeout ends a test whose awaited event never comes; it is no
// assertion on how long anything takes.
const waitTimeout = 30 * time.Second

// stuckDB holds the first document claim until release closes: the call
// that made it keeps the document's lock all that time.
type stuckDB struct {
	database.Database
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (d *stuckDB) ClaimDocument(ctx context.Context, docID string, epoch int64) (*database.DocInfo, error) {
	d.once.Do(func() {
		close(d.entered)
		<-d.release
	})
	return d.Database.ClaimDocument(ctx, docID, epoch)
}

// TestStuckDocumentDoesNotStallTheManager loses the binding of a document
// whose lock a stuck call holds. Releasing it runs on the affinity manager's
// goroutine; the manager must still register again and follow the
// membership.
func TestStuckDocumentDoesNotStallTheManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	logger := slog.New(slog.DiscardHandler)
	db := &stuckDB{Database: memory.New(), entered: make(chan struct{}), release: make(chan struct{})}
	b, err := backend.New(backend.Config{DB: db, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	channels := channel.New(channel.Config{Logger: logger})
	defer channels.Close()

	released := make(chan []string, 1)
	lost := routing.Lost(b, channels, 50*time.Millisecond, logger)
	st := sessmemory.New(sessmemory.Config{})
	const addr = "127.0.0.1:9701"
	mgr, err := affinity.New(affinity.Config{
		Store: st.Client(), AdvertiseAddr: addr, TTL: time.Minute, Logger: logger,
		OnLost: func(keys []string) {
			lost(keys)
			released <- keys
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mgr.Stop(context.Background()) }()
	// A failing test releases the stuck call too, so that Stop returns.
	var unstick sync.Once
	defer unstick.Do(func() { close(db.release) })

	const key = "doc"
	owner, err := mgr.Owner(ctx, key)
	if err != nil || !owner.Self {
		t.Fatalf("owner of %s: %+v, %v", key, owner, err)
	}
	// The document is the default project's, as its binding key says.
	inProject := &database.ProjectInfo{ID: database.DefaultProjectID}
	client, err := b.ActivateClient(ctx, inProject, "stuck", nil)
	if err != nil {
		t.Fatal(err)
	}
	attached := make(chan error, 1)
	go func() {
		_, _, err := b.AttachDocument(ctx, inProject, owner.Epoch, client.ID, key,
			&api.ChangePack{DocumentKey: key, Checkpoint: &api.Checkpoint{}})
		attached <- err
	}()
	select {
	case <-db.entered:
	case <-ctx.Done():
		t.Fatal("the attach never claimed the document")
	}

	st.ExpireLease(storetest.LiveMember(t, st, addr))
	select {
	case keys := <-released:
		if len(keys) != 1 || keys[0] != key {
			t.Fatalf("lost %v, want [%s]", keys, key)
		}
	case <-ctx.Done():
		t.Fatal("the loss of the binding was never handled")
	}
	// The manager goes on: it registers again and sees a node that joins.
	other, err := affinity.New(affinity.Config{Store: st.Client(), AdvertiseAddr: "127.0.0.1:9702", TTL: time.Minute, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Stop(context.Background()) }()
	for len(mgr.Members()) != 2 {
		if ctx.Err() != nil {
			t.Fatalf("the manager sees members %v, want both nodes", mgr.Members())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if o, err := mgr.Owner(ctx, "after-the-loss"); err != nil {
		t.Fatalf("owner after the loss: %+v, %v", o, err)
	}

	unstick.Do(func() { close(db.release) })
	<-attached
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
