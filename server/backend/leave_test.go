package backend_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend"
)

// clearOf returns the presence CLEAR change the SDK sends when the client
// detaches.
func clearOf(tb testing.TB, clientID string, clientSeq uint32, lamport int64) *api.Change {
	c := edit(tb, clientID, clientSeq, lamport)
	c.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	return c
}

// presenceOf returns the presence change the pull gave for the actor's
// change with clientSeq, failing if the pull has no such change.
func presenceOf(tb testing.TB, changes []*api.Change, actorID string, clientSeq uint32) *api.PresenceChange {
	tb.Helper()
	for _, c := range changes {
		if hex.EncodeToString(c.GetId().GetActorId()) == actorID && c.GetId().GetClientSeq() == clientSeq {
			return c.GetPresenceChange()
		}
	}
	tb.Fatalf("the pull has no change %d of %s", clientSeq, actorID)
	return nil
}

// TestPullInFlightWhileALeaverComesBack is the interleaving of a client
// that detaches and attaches again while another client's pull is in flight:
// the pull is answered after the detach and before the new attach, but the
// SDK applies its answer after the WATCHED of the new attach, which arrives
// on the stream, another connection. A CLEAR in that answer would take the
// returning client offline at the puller for good. The puller, watching,
// learns of the leave from UNWATCHED instead, queued before the pull could
// be answered; a client that does not watch still gets the CLEAR, and so does
// a watcher for the CLEAR of a client that stays attached.
func TestPullInFlightWhileALeaverComesBack(t *testing.T) {
	ctx := context.Background()
	b, _ := newBackend(t, nil)
	x := activate(t, b, "x")
	w := activate(t, b, "w")
	n := activate(t, b, "n")
	docID, _, err := b.AttachDocument(ctx, defaultProject, 0, x, "doc", pack(0, 1, edit(t, x, 1, 1)))
	require.NoError(t, err)
	_, resp, err := b.AttachDocument(ctx, defaultProject, 0, w, "doc", pack(0, 0))
	require.NoError(t, err)
	wSeq := resp.GetCheckpoint().GetServerSeq()
	_, resp, err = b.AttachDocument(ctx, defaultProject, 0, n, "doc", pack(0, 0))
	require.NoError(t, err)
	nSeq := resp.GetCheckpoint().GetServerSeq()

	subW, _, err := b.Watch(ctx, defaultProject, 0, w, docID)
	require.NoError(t, err)
	t.Cleanup(subW.Close)
	subX, _, err := b.Watch(ctx, defaultProject, 0, x, docID)
	require.NoError(t, err)
	t.Cleanup(subX.Close)
	require.Equal(t, backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, Publisher: x}, nextEvent(t, subW))

	_, err = b.DetachDocument(ctx, defaultProject, 0, x, docID, pack(1, 2, clearOf(t, x, 2, 2)))
	require.NoError(t, err)
	ev := nextEvent(t, subW)
	if ev.Type == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
		ev = nextEvent(t, subW)
	}
	require.Equal(t, backend.Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED, Publisher: x}, ev,
		"the watcher must hear of the leave before its pull can be answered")

	// The pulls in flight, answered before x comes back.
	resp, err = b.PushPull(ctx, defaultProject, 0, w, docID, pack(wSeq, 0), false)
	require.NoError(t, err)
	wSeq = resp.GetCheckpoint().GetServerSeq()
	require.Nil(t, presenceOf(t, resp.GetChanges(), x, 2), "a watcher's pull carried the CLEAR of a client that left")
	resp, err = b.PushPull(ctx, defaultProject, 0, n, docID, pack(nSeq, 0), false)
	require.NoError(t, err)
	require.Equal(t, api.PresenceChange_CHANGE_TYPE_CLEAR, presenceOf(t, resp.GetChanges(), x, 2).GetType(),
		"a client that does not watch learns of the leave only from the CLEAR")

	// x comes back; the CLEAR of a client that stays attached is its
	// presence as it is now, and reaches the watcher.
	_, resp, err = b.AttachDocument(ctx, defaultProject, 0, x, "doc", pack(0, 1, edit(t, x, 1, 3)))
	require.NoError(t, err)
	again, _, err := b.Watch(ctx, defaultProject, 0, x, docID)
	require.NoError(t, err)
	t.Cleanup(again.Close)
	_, err = b.PushPull(ctx, defaultProject, 0, x, docID, pack(resp.GetCheckpoint().GetServerSeq(), 2, clearOf(t, x, 2, 4)), false)
	require.NoError(t, err)
	resp, err = b.PushPull(ctx, defaultProject, 0, w, docID, pack(wSeq, 0), false)
	require.NoError(t, err)
	require.Equal(t, api.PresenceChange_CHANGE_TYPE_CLEAR, presenceOf(t, resp.GetChanges(), x, 2).GetType(),
		"the CLEAR of a client still attached must reach a watcher")
}
