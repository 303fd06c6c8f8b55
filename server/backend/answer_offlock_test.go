package backend_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
)

// TestPushPullDoesNotWaitForAnAnswer: while the snapshot answering a late
// joiner is being encoded (held there), the document's other clients'
// PushPulls complete, and the late joiner then gets the document at the head
// it was answered at, with that head's version vector, as if it had been
// encoded under the lock.
func TestPushPullDoesNotWaitForAnAnswer(t *testing.T) {
	b, db := configuredBackend(t, backend.Config{SnapshotInterval: -1, SnapshotThreshold: 5})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	entered, resume := holdHook(b, backend.SetBeforeAnswer, 1)
	a := newWriter(t, b, "a")
	a.attach("doc")
	for i := range 10 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}

	late := newWriter(t, b, "late")
	type answer struct {
		resp *api.ChangePack
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		_, resp, err := b.AttachDocument(context.Background(), defaultProject, 0, late.id, "doc", pack(0, 0))
		done <- answer{resp, err}
	}()
	if seq := <-entered; seq != 10 {
		t.Fatalf("answer at %d being encoded, want 10", seq)
	}
	// The answer is held in its encoding: the document still takes changes.
	for i := range 3 {
		a.mustPush(a.set(fmt.Sprintf("k%d", i), "later"))
	}
	close(resume)
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if seq := got.resp.GetCheckpoint().GetServerSeq(); seq != 10 {
		t.Fatalf("answered at %d, want 10", seq)
	}
	if s, want := snapshotJSON(t, got.resp.GetSnapshot()), replayJSON(t, db, a.docID, 10); s != want {
		t.Fatalf("late joiner got %s, the log up to its checkpoint makes %s", s, want)
	}
	if vv, want := got.resp.GetVersionVector().GetVector(), replayVector(t, db, a.docID, 10); !maps.Equal(vv, want) {
		t.Fatalf("late joiner got vector %v, the log up to its checkpoint makes %v", vv, want)
	}
	if n := b.Metrics().SnapshotsSent.Load(); n != 1 {
		t.Fatalf("%d snapshot answers, want 1", n)
	}
}
