package backend_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
	"github.com/yorkie-affinity/yorkie/server/project"
	"github.com/yorkie-affinity/yorkie/server/servertest/testclock"
)

// projectBackend is a backend over a database whose default project has
// the limits u sets, with the resolver that caches the project's settings
// on clock.
// projectBackend returns a backend over a database whose default project
// has u applied, the database, the resolver of projects, and inStored,
// which returns the default project as the resolver gives it at that
// moment: what the RPC layer gives a call without an API key.
func projectBackend(t *testing.T, u *database.ProjectUpdate, clock *testclock.Clock) (b *backend.Backend, db database.Database, projects *project.Resolver, inStored func() *database.ProjectInfo) {
	t.Helper()
	db = memory.New()
	ctx := context.Background()
	p, err := db.EnsureDefaultProject(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateProject(ctx, p.Owner, p.ID, u); err != nil {
		t.Fatal(err)
	}
	rcfg := project.ResolverConfig{DB: db, CacheTTL: time.Minute, UseDefaultProject: true}
	if clock != nil {
		rcfg.Now = clock.Now
	}
	if projects, err = project.NewResolver(rcfg); err != nil {
		t.Fatal(err)
	}
	if b, err = backend.New(backend.Config{DB: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	inStored = func() *database.ProjectInfo {
		t.Helper()
		p, err := projects.Resolve(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return b, db, projects, inStored
}

func ptr[T any](v T) *T { return &v }

// TestAttachmentsPerDocument: the project's bound counts the clients
// attached to a document; one leaving makes room, and attaching again
// counts once.
func TestAttachmentsPerDocument(t *testing.T) {
	b, _, _, inStored := projectBackend(t, &database.ProjectUpdate{MaxAttachmentsPerDocument: ptr(2)}, nil)
	ctx, p := context.Background(), inStored()
	a, c, docID := attachTwoIn(p, t, b)
	// Attaching again replaces the client's attachment: still two.
	if _, _, err := b.AttachDocument(ctx, p, 0, a, "doc", pack(0, 0)); err != nil {
		t.Fatalf("attach again: %v", err)
	}
	d := activateIn(p, t, b, "d")
	_, _, err := b.AttachDocument(ctx, p, 0, d, "doc", pack(0, 0))
	if !errors.Is(err, backend.ErrTooManyAttachments) {
		t.Fatalf("third attach: %v, want ErrTooManyAttachments", err)
	}
	// Another document of the project is not affected.
	if _, _, err := b.AttachDocument(ctx, p, 0, d, "other", pack(0, 0)); err != nil {
		t.Fatalf("attach of another document: %v", err)
	}
	if _, err := b.DetachDocument(ctx, p, 0, c, docID, pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AttachDocument(ctx, p, 0, d, "doc", pack(0, 0)); err != nil {
		t.Fatalf("attach after a detach: %v", err)
	}
}

// TestSubscribersPerDocument: the project's bound counts the clients
// watching a document, not their streams; one stopping makes room.
func TestSubscribersPerDocument(t *testing.T) {
	b, _, _, inStored := projectBackend(t, &database.ProjectUpdate{MaxSubscribersPerDocument: ptr(1)}, nil)
	ctx, p := context.Background(), inStored()
	a, c, docID := attachTwoIn(p, t, b)
	first, _, err := b.Watch(ctx, p, 0, a, docID)
	if err != nil {
		t.Fatal(err)
	}
	// The same client's second stream (a reconnect overlapping the old
	// one) is not refused.
	second, _, err := b.Watch(ctx, p, 0, a, docID)
	if err != nil {
		t.Fatalf("second stream of the watching client: %v", err)
	}
	if _, _, err := b.Watch(ctx, p, 0, c, docID); !errors.Is(err, backend.ErrTooManySubscribers) {
		t.Fatalf("watch by another client: %v, want ErrTooManySubscribers", err)
	}
	first.Close()
	second.Close()
	sub, watchers, err := b.Watch(ctx, p, 0, c, docID)
	if err != nil {
		t.Fatalf("watch once the other stopped: %v", err)
	}
	defer sub.Close()
	if len(watchers) != 1 || watchers[0] != c {
		t.Fatalf("watchers %v, want only %s", watchers, c)
	}
}

// TestProjectOfTheCallWins: a project in the call's context is used as it
// is, whatever the default project says.
func TestProjectOfTheCallWins(t *testing.T) {
	b, _, _, inStored := projectBackend(t, &database.ProjectUpdate{MaxAttachmentsPerDocument: ptr(5), MaxSizePerDocument: ptr(300)}, nil)
	ctx, p := context.Background(), &database.ProjectInfo{ID: "0123456789abcdef01234567", MaxAttachmentsPerDocument: 1}
	// The clients are the project's: another project's could not attach.
	var a, c string
	for _, id := range []*string{&a, &c} {
		info, err := b.ActivateClient(ctx, p, "client", nil)
		if err != nil {
			t.Fatal(err)
		}
		*id = info.ID
	}
	if _, _, err := b.AttachDocument(ctx, p, 0, a, "doc", pack(0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AttachDocument(ctx, p, 0, c, "doc", pack(0, 0)); !errors.Is(err, backend.ErrTooManyAttachments) {
		t.Fatalf("second attach: %v, want ErrTooManyAttachments", err)
	}
	if got, err := b.DocumentSizeLimit(p); err != nil || got != backend.DefaultMaxSizePerDocument {
		t.Fatalf("size limit of a project setting none: %d, %v; want the server's %d", got, err, backend.DefaultMaxSizePerDocument)
	}
	if got, err := b.DocumentSizeLimit(inStored()); err != nil || got != 300 {
		t.Fatalf("size limit of the default project: %d, %v; want 300", got, err)
	}
}

// TestProjectSizeLimit: the project's size bound replaces the server's, and
// the hard bound (by default DefaultSizeHardLimitFactor times it) is what a
// push is refused past.
func TestProjectSizeLimit(t *testing.T) {
	b, _, _, inStored := projectBackend(t, &database.ProjectUpdate{MaxSizePerDocument: ptr(1000)}, nil)
	w := newWriterIn(inStored(), t, b, "a")
	w.attach("doc")
	w.mustPush(w.set("small", "x"))
	w.mustPush(w.set("past", strings.Repeat("p", 1000)))
	if _, err := w.push(w.set("big", strings.Repeat("y", 1000))); !errors.Is(err, backend.ErrDocumentSizeExceedsLimit) {
		t.Fatalf("push past the project's hard bound: %v, want ErrDocumentSizeExceedsLimit", err)
	}
}

// TestProjectSettingsReachTheBackend: an update through this node's admin
// API applies at once; one made elsewhere once the cached copy expires.
// The backend acts on the project each call carries.
func TestProjectSettingsReachTheBackend(t *testing.T) {
	clock := &testclock.Clock{}
	b, db, projects, inStored := projectBackend(t, &database.ProjectUpdate{}, clock)
	ctx := context.Background()
	// Each call carries the project as the RPC layer resolves it then.
	if got, _ := b.DocumentSizeLimit(inStored()); got != backend.DefaultMaxSizePerDocument {
		t.Fatalf("size limit %d, want the server's", got)
	}
	// Another node's update.
	p, err := db.UpdateProject(ctx, "owner", database.DefaultProjectID, &database.ProjectUpdate{MaxSizePerDocument: ptr(500)})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute + time.Second)
	if got, _ := b.DocumentSizeLimit(inStored()); got != 500 {
		t.Fatalf("size limit %d after the cache expired, want 500", got)
	}
	// This node's update.
	p.MaxSizePerDocument = 700
	projects.Updated(p)
	if got, _ := b.DocumentSizeLimit(inStored()); got != 700 {
		t.Fatalf("size limit %d after Updated, want 700", got)
	}
}

// TestRemoveOnDetach: with the project's setting, the last client to
// detach (explicitly or by deactivating) removes the document; a detach
// that leaves others attached does not.
func TestRemoveOnDetach(t *testing.T) {
	b, db, _, inStored := projectBackend(t, &database.ProjectUpdate{RemoveOnDetach: ptr(true)}, nil)
	ctx, p := context.Background(), inStored()
	a, c, docID := attachTwoIn(p, t, b)
	resp, err := b.DetachDocument(ctx, p, 0, a, docID, pack(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if resp.IsRemoved {
		t.Fatal("the first detach removed the document, another client is attached")
	}
	resp, err = b.DetachDocument(ctx, p, 0, c, docID, pack(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.IsRemoved {
		t.Fatal("the last detach does not answer is_removed")
	}
	info, err := db.FindDocument(ctx, database.DefaultProjectID, docID)
	if err != nil || info.RemovedAt.IsZero() {
		t.Fatalf("document after the last detach: %+v, %v; want removed", info, err)
	}
	// The key names a new document from now on.
	d := activateIn(p, t, b, "d")
	newID, _, err := b.AttachDocument(ctx, p, 0, d, "doc", pack(0, 0))
	if err != nil || newID == docID {
		t.Fatalf("attach after removal: %s, %v; want a new document", newID, err)
	}
	// Deactivating the last attached client removes it too.
	if err := b.DeactivateClient(ctx, p, d, nil); err != nil {
		t.Fatal(err)
	}
	if info, err := db.FindDocument(ctx, database.DefaultProjectID, newID); err != nil || info.RemovedAt.IsZero() {
		t.Fatalf("document after its last client deactivated: %+v, %v; want removed", info, err)
	}
}
