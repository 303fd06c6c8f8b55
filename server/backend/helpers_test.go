package backend_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/servertest/sdksim"
)

// newBackend returns a backend over db (a fresh memory database if nil),
// closed when the test ends.
func newBackend(tb testing.TB, db database.Database) (*backend.Backend, database.Database) {
	tb.Helper()
	b, db := configuredBackend(tb, backend.Config{DB: db})
	tb.Cleanup(func() { _ = b.Close(context.Background()) })
	return b, db
}

// configuredBackend returns a backend with cfg, over a fresh memory database
// unless cfg names one, and its database. Closing it is the test's: some
// close it to wait for snapshots, some never do.
func configuredBackend(tb testing.TB, cfg backend.Config) (*backend.Backend, database.Database) {
	tb.Helper()
	if cfg.DB == nil {
		cfg.DB = memory.New()
	}
	b, err := backend.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return b, cfg.DB
}

// holdHook installs, with set, a hook that sends the seq of each run it
// enters on entered (buffered for runs) and then blocks until resume is
// closed, so a test can act while the backend is held there.
func holdHook(b *backend.Backend, set func(*backend.Backend, func(docID string, seq int64)), runs int) (entered chan int64, resume chan struct{}) {
	entered, resume = make(chan int64, runs), make(chan struct{})
	set(b, func(_ string, seq int64) {
		entered <- seq
		<-resume
	})
	return entered, resume
}

func activate(tb testing.TB, b *backend.Backend, key string) string {
	tb.Helper()
	return activateIn(defaultProject, tb, b, key)
}

// activateIn activates a client with key in project p.
func activateIn(p *database.ProjectInfo, tb testing.TB, b *backend.Backend, key string) string {
	tb.Helper()
	info, err := b.ActivateClient(context.Background(), p, key, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return info.ID
}

// edit returns a change of the client with an operation-free body, the way
// the SDK makes presence changes, with the ID the SDK gives it.
func edit(tb testing.TB, clientID string, clientSeq uint32, lamport int64) *api.Change {
	tb.Helper()
	actor, err := hex.DecodeString(clientID)
	if err != nil {
		tb.Fatal(err)
	}
	return &api.Change{
		Id: sdksim.ChangeID(actor, clientSeq, lamport),
		PresenceChange: &api.PresenceChange{
			Type:     api.PresenceChange_CHANGE_TYPE_PUT,
			Presence: &api.Presence{Data: map[string]string{"n": "1"}},
		},
	}
}

// simClient activates a client with key and returns its SDK-side state.
func simClient(tb testing.TB, b *backend.Backend, key string) *sdksim.Client {
	tb.Helper()
	c, err := sdksim.New(activate(tb, b, key))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// attachSim attaches c to docKey with what it has pending and returns the
// document's ID.
func attachSim(tb testing.TB, b *backend.Backend, c *sdksim.Client, docKey string) string {
	tb.Helper()
	c.Attached(docKey)
	docID, resp, err := b.AttachDocument(context.Background(), defaultProject, 0, c.ID, docKey, c.Pack())
	if err != nil {
		tb.Fatalf("attach %s to %s: %v", c.ID, docKey, err)
	}
	if _, err := c.Absorb(resp); err != nil {
		tb.Fatal(err)
	}
	return docID
}

// pushPullSim sends c's pending changes and takes in the answer.
func pushPullSim(ctx context.Context, b *backend.Backend, c *sdksim.Client, docID string, pushOnly bool) error {
	resp, err := b.PushPull(ctx, defaultProject, 0, c.ID, docID, c.Pack(), pushOnly)
	if err != nil {
		return fmt.Errorf("push pull of %s: %w", c.ID, err)
	}
	_, err = c.Absorb(resp)
	return err
}

// pack returns a request pack the way the SDK builds one: the checkpoint's
// client_seq counts the changes sent.
func pack(serverSeq int64, clientSeq uint32, changes ...*api.Change) *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: "doc",
		Checkpoint:  &api.Checkpoint{ServerSeq: serverSeq, ClientSeq: clientSeq},
		Changes:     changes,
	}
}

// storedLog returns the document's whole log.
func storedLog(tb testing.TB, db database.Database, docID string) []*database.Change {
	tb.Helper()
	log, err := db.FindChanges(context.Background(), docID, 1, 1<<62)
	if err != nil {
		tb.Fatal(err)
	}
	return log
}

// checkLog fails unless the log is gapless from 1, every body carries its
// server_seq and a version vector, and each actor's client_seq values rise
// by one within an attachment (a restart at 1 marks a new attachment).
func checkLog(tb testing.TB, log []*database.Change) {
	tb.Helper()
	last := map[string]uint32{}
	for i, c := range log {
		if c.ServerSeq != int64(i+1) {
			tb.Fatalf("change %d has server_seq %d: log has a gap", i, c.ServerSeq)
		}
		if c.Body.GetId().GetServerSeq() != c.ServerSeq {
			tb.Fatalf("server_seq %d: body says %d", c.ServerSeq, c.Body.GetId().GetServerSeq())
		}
		if c.Body.GetId().GetVersionVector() == nil {
			tb.Fatalf("server_seq %d stored without a version vector", c.ServerSeq)
		}
		if c.ClientSeq != 1 && c.ClientSeq != last[c.ActorID]+1 {
			tb.Fatalf("server_seq %d: actor %s client_seq %d after %d", c.ServerSeq, c.ActorID, c.ClientSeq, last[c.ActorID])
		}
		last[c.ActorID] = c.ClientSeq
	}
}

// nextEvent waits for the subscription's next event; the deadline only bounds
// a broken run.
func nextEvent(tb testing.TB, sub *backend.Subscription) backend.Event {
	tb.Helper()
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			tb.Fatalf("subscription ended: %v", sub.Err())
		}
		return ev
	case <-time.After(5 * time.Second):
		tb.Fatal("no event within 5s")
	}
	return backend.Event{}
}

// attachTwo activates clients "a" and "c" and attaches both to document "doc".
func attachTwo(tb testing.TB, b *backend.Backend) (a, c, docID string) {
	tb.Helper()
	return attachTwoIn(defaultProject, tb, b)
}

// attachTwoIn is attachTwo in project p.
func attachTwoIn(p *database.ProjectInfo, tb testing.TB, b *backend.Backend) (a, c, docID string) {
	tb.Helper()
	ctx := context.Background()
	a, c = activateIn(p, tb, b, "a"), activateIn(p, tb, b, "c")
	docID, _, err := b.AttachDocument(ctx, p, 0, a, "doc", pack(0, 0))
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := b.AttachDocument(ctx, p, 0, c, "doc", pack(0, 0)); err != nil {
		tb.Fatal(err)
	}
	return a, c, docID
}

// defaultProject is the default project as a server without a stored one
// serves it, the project the RPC layer gives calls without an API key:
// every backend call names its project.
var defaultProject = &database.ProjectInfo{
	ID: database.DefaultProjectID, Name: database.DefaultProjectName, AutoRevisionEnabled: true,
}
