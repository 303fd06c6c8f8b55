package backend_test

import (
	"context"
	"sync"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/backend/database/memory"
)

// setChange is edit's change with one Set of key on the root object
// instead of the presence: an edit of the document's content.
func setChange(tb testing.TB, clientID string, clientSeq uint32, lamport int64, key string) *api.Change {
	c := edit(tb, clientID, clientSeq, lamport)
	c.PresenceChange = nil
	ticket := &api.TimeTicket{Lamport: lamport, ActorId: c.Id.ActorId}
	c.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: &api.TimeTicket{ActorId: make([]byte, 12)},
		Key:             key,
		Value:           &api.JSONElementSimple{CreatedAt: ticket, Type: api.ValueType_VALUE_TYPE_NULL},
		ExecutedAt:      ticket,
	}}}}
	return c
}

func TestRootChangedOnlyForStoredOperations(t *testing.T) {
	var mu sync.Mutex
	var changed []string
	b, err := backend.New(backend.Config{DB: memory.New(), OnRootChanged: func(_ context.Context, p *database.ProjectInfo, key string) {
		if p != defaultProject {
			t.Errorf("root of %q changed in project %+v, want the call's", key, p)
		}
		mu.Lock()
		defer mu.Unlock()
		changed = append(changed, key)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	ctx := context.Background()
	c := activate(t, b, "c")
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(changed)
	}

	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, c, "doc", pack(0, 1, edit(t, c, 1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 0 {
		t.Fatalf("a presence-only attach reported %d root changes", n)
	}
	set := setChange(t, c, 2, 2, "a")
	if _, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(1, 2, set), false); err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 1 || changed[0] != "doc" {
		t.Fatalf("root changes %v after a Set, want one of doc", changed)
	}
	// The SDK sends unacknowledged changes again: a resent Set with a new
	// presence-only change stores only the presence.
	if _, err := b.PushPull(ctx, defaultProject, 0, c, docID, pack(2, 3, set, edit(t, c, 3, 3)), false); err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 1 {
		t.Fatalf("root changes %v after a resend and a presence change", changed)
	}
}
