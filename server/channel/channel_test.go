package channel

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func newTestManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m := New(cfg)
	t.Cleanup(m.Close)
	return m
}

func TestCountsIncludeSubChannels(t *testing.T) {
	m := newTestManager(t, Config{})
	attach := func(client, key string) string {
		t.Helper()
		id, _, err := m.Attach(client, key, 0, nil)
		if err != nil {
			t.Fatalf("attach %s to %s: %v", client, key, err)
		}
		return id
	}
	attach("aa", "room")
	attach("bb", "room.1")
	s := attach("cc", "room.1.a")
	attach("dd", "room.2")
	attach("ee", "other")
	for key, want := range map[string]int64{"room": 4, "room.1": 2, "room.1.a": 1, "room.2": 1, "other": 1, "room.3": 0} {
		if got := m.Count(key); got != want {
			t.Errorf("count of %s = %d, want %d", key, got, want)
		}
	}
	if n, err := m.Detach("cc", "room.1.a", s, nil); err != nil || n != 0 {
		t.Fatalf("detach = %d, %v; want 0", n, err)
	}
	if got := m.Count("room"); got != 3 {
		t.Errorf("count of room after detach = %d, want 3", got)
	}
}

func TestAttachTwiceKeepsOneSession(t *testing.T) {
	m := newTestManager(t, Config{})
	a, _, _ := m.Attach("aa", "room", 0, nil)
	b, n, _ := m.Attach("aa", "room", 0, nil)
	if a != b || n != 1 {
		t.Fatalf("second attach = %s, %d; want %s, 1", b, n, a)
	}
}

func TestWatcherSeesParentCountsAndNewerSeqs(t *testing.T) {
	m := newTestManager(t, Config{})
	w, err := m.Watch("aa", "room", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first, _ := w.LatestCount()
	if _, _, err := m.Attach("bb", "room.1", 0, nil); err != nil {
		t.Fatal(err)
	}
	<-w.Ready()
	_, c, changed := w.Take()
	if !changed || c.Sessions != 1 || c.Seq <= first.Seq {
		t.Fatalf("count after a child's attach = %+v (changed %v), before %+v", c, changed, first)
	}
}

func TestBroadcastSkipsSenderAndOtherChannels(t *testing.T) {
	m := newTestManager(t, Config{})
	sender, _ := m.Watch("aa", "room", nil)
	other, _ := m.Watch("bb", "room", nil)
	child, _ := m.Watch("cc", "room.1", nil)
	if err := m.Broadcast("aa", "room", "cursor", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	<-other.Ready()
	msgs, _, _ := other.Take()
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	msg := msgs[0]
	if msg.Publisher != "aa" || msg.Topic != "cursor" || string(msg.Payload) != `{"x":1}` {
		t.Fatalf("message = %+v", msg)
	}
	if got, _, _ := sender.Take(); len(got) != 0 {
		t.Fatalf("the sender got %d messages, want none", len(got))
	}
	if got, _, _ := child.Take(); len(got) != 0 {
		t.Fatalf("a sub-channel's watcher got %d messages, want none", len(got))
	}
}

func TestBroadcastPayloadLimit(t *testing.T) {
	m := newTestManager(t, Config{MaxPayloadBytes: 8})
	if err := m.Broadcast("aa", "room", "t", []byte("123456789")); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("over-limit broadcast: %v, want ErrPayloadTooLarge", err)
	}
	if err := m.Broadcast("aa", "room", "t", []byte("1234567")); err != nil {
		t.Fatalf("broadcast at the limit, topic included: %v", err)
	}
	if err := m.Broadcast("aa", "room", "topic", []byte("1234")); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("broadcast whose topic takes it over the limit: %v, want ErrPayloadTooLarge", err)
	}
}

// TestBroadcastTopicLimit: a topic is bounded on its own, whatever the
// payload limit, so a topic cannot carry what the payload bound refuses.
func TestBroadcastTopicLimit(t *testing.T) {
	m := newTestManager(t, Config{MaxPayloadBytes: 1 << 20})
	if err := m.Broadcast("aa", "room", strings.Repeat("t", MaxTopicBytes+1), nil); !errors.Is(err, ErrPayloadTooLarge) {
		t.Fatalf("broadcast with a %d-byte topic: %v, want ErrPayloadTooLarge", MaxTopicBytes+1, err)
	}
	if err := m.Broadcast("aa", "room", strings.Repeat("t", MaxTopicBytes), nil); err != nil {
		t.Fatalf("broadcast with a topic at the limit: %v", err)
	}
}

func TestSlowWatcherIsEnded(t *testing.T) {
	m := newTestManager(t, Config{WatcherBuffer: 2})
	w, _ := m.Watch("bb", "room", nil)
	for range 3 {
		if err := m.Broadcast("aa", "room", "t", nil); err != nil {
			t.Fatal(err)
		}
	}
	<-w.Done()
	if !errors.Is(w.Err(), ErrSlowWatcher) {
		t.Fatalf("err = %v, want ErrSlowWatcher", w.Err())
	}
}

func TestSessionsExpireUnlessRefreshed(t *testing.T) {
	ttl := time.Hour // the test sweeps by hand
	m := newTestManager(t, Config{SessionTTL: ttl})
	_, _, _ = m.Attach("aa", "room", 0, nil)
	kept, _, _ := m.Attach("bb", "room", 0, nil)
	later := time.Now().Add(ttl / 2)
	// A refresh at "later" is simulated by refreshing now and sweeping from
	// a point past the first session's TTL only.
	if _, err := m.Refresh("bb", "room", kept, 0, nil); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.sessions[kept].refreshed = later
	m.mu.Unlock()
	if n := m.Sweep(time.Now().Add(ttl + time.Minute)); n != 1 {
		t.Fatalf("swept %d sessions, want 1", n)
	}
	if got := m.Count("room"); got != 1 {
		t.Fatalf("count = %d, want 1", got)
	}
}

func TestRefreshOfUnknownSessionRecreatesIt(t *testing.T) {
	m := newTestManager(t, Config{})
	id, _, _ := m.Attach("aa", "room.1", 0, nil)
	m.Release("room", nil)
	if got := m.Count("room"); got != 0 {
		t.Fatalf("count after release = %d", got)
	}
	n, err := m.Refresh("aa", "room.1", id, 0, nil)
	if err != nil || n != 1 {
		t.Fatalf("refresh = %d, %v; want 1", n, err)
	}
	if _, err := m.Refresh("bb", "room.1", id, 0, nil); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("refresh of another client's session: %v, want ErrSessionNotFound", err)
	}
	if _, err := m.Refresh("aa", "room.1", "nope", 0, nil); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("refresh with a malformed ID: %v, want ErrInvalidSession", err)
	}
}

func TestReleaseEndsWatchersOfTheGroupOnly(t *testing.T) {
	m := newTestManager(t, Config{})
	w1, _ := m.Watch("aa", "room.1", nil)
	w2, _ := m.Watch("aa", "roomy", nil)
	m.Release("room", nil)
	<-w1.Done()
	if !errors.Is(w1.Err(), ErrReleased) {
		t.Fatalf("err = %v", w1.Err())
	}
	select {
	case <-w2.Done():
		t.Fatal("a watcher of another group ended")
	default:
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "room.1.x", "A-b_c~"} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", ".a", "a.", "a..b", "a b", "a/b"} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%q: %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestSessionTTLPerSession(t *testing.T) {
	m := newTestManager(t, Config{SessionTTL: time.Hour}) // the test sweeps by hand
	_, _, err := m.Attach("aa", "p1/room", 0, nil)
	require.NoError(t, err)
	short, _, err := m.Attach("bb", "p2/room", time.Minute, nil)
	require.NoError(t, err)
	now := time.Now()
	require.Equal(t, 0, m.Sweep(now.Add(30*time.Second)))
	require.Equal(t, 1, m.Sweep(now.Add(2*time.Minute)), "the session with its project's TTL expires")
	require.EqualValues(t, 0, m.Count("p2/room"))
	require.EqualValues(t, 1, m.Count("p1/room"), "the one with the manager's TTL stays")

	// A refresh brings it back under the TTL it names; one naming none
	// takes the manager's again.
	_, err = m.Refresh("bb", "p2/room", short, time.Minute, nil)
	require.NoError(t, err)
	require.Equal(t, 1, m.Sweep(time.Now().Add(2*time.Minute)))
	_, err = m.Refresh("bb", "p2/room", short, 0, nil)
	require.NoError(t, err)
	require.Equal(t, 0, m.Sweep(time.Now().Add(2*time.Minute)))
	require.EqualValues(t, 1, m.Count("p2/room"))
}
