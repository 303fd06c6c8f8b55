package pubsub_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/pubsub"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

const (
	changed   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED
	watched   = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED
	unwatched = api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED
)

// receive waits for the next event, failing the test after a generous
// deadline (the deadline only bounds a broken run).
func receive(t *testing.T, s *pubsub.Subscription) pubsub.Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("events closed: %v", s.Err())
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return pubsub.Event{}
}

func subscribe(t *testing.T, ps *pubsub.PubSub, doc, client string) (*pubsub.Subscription, []string) {
	t.Helper()
	s, watchers, err := ps.Subscribe(doc, client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	slices.Sort(watchers)
	return s, watchers
}

func TestWatchedAndUnwatchedAreAnnounced(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	a, watchers := subscribe(t, ps, "d", "a")
	if !slices.Equal(watchers, []string{"a"}) {
		t.Fatalf("watchers %v", watchers)
	}
	b, watchers := subscribe(t, ps, "d", "b")
	if !slices.Equal(watchers, []string{"a", "b"}) {
		t.Fatalf("watchers %v", watchers)
	}
	if ev := receive(t, a); ev != (pubsub.Event{Type: watched, Publisher: "b"}) {
		t.Fatalf("a got %v", ev)
	}
	// A second stream of b (a reconnect overlapping the old one) is not a
	// new watcher, and closing one of the two does not make b leave.
	b2, _ := subscribe(t, ps, "d", "b")
	b.Close()
	b.Close()
	b2.Close()
	if ev := receive(t, a); ev != (pubsub.Event{Type: unwatched, Publisher: "b"}) {
		t.Fatalf("a got %v", ev)
	}
	if got := ps.Watchers("d"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("watchers after b left: %v", got)
	}
	if b.Err() != nil {
		t.Fatalf("closed subscription has error %v", b.Err())
	}
}

func TestPublisherDoesNotReceiveItsOwnEvents(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	a, _ := subscribe(t, ps, "d", "a")
	b, _ := subscribe(t, ps, "d", "b")
	receive(t, a) // WATCHED b
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "a"})
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "b"})
	if ev := receive(t, b); ev.Publisher != "a" {
		t.Fatalf("b got %v", ev)
	}
	if ev := receive(t, a); ev.Publisher != "b" {
		t.Fatalf("a got %v, want only b's CHANGED", ev)
	}
	select {
	case ev := <-a.Events():
		t.Fatalf("a got extra event %v", ev)
	default:
	}
}

func TestSlowSubscriberDoesNotBlockOthersAndChangedCoalesces(t *testing.T) {
	ps := pubsub.New(pubsub.Config{QueueSize: 4})
	slow, _ := subscribe(t, ps, "d", "slow")
	fast, _ := subscribe(t, ps, "d", "fast")
	receive(t, slow) // WATCHED fast
	for i := range 1000 {
		ps.Publish("d", pubsub.Event{Type: changed, Publisher: "p"})
		if ev := receive(t, fast); ev.Type != changed {
			t.Fatalf("fast got %v at %d", ev, i)
		}
	}
	// The slow one never read: its 1000 CHANGED collapse into at most two
	// (one already taken by its pump, one queued). A later WATCHED marks
	// the end of what was queued.
	subscribe(t, ps, "d", "marker")
	got := 0
	for ev := receive(t, slow); ev.Type != watched; ev = receive(t, slow) {
		got++
	}
	if got < 1 || got > 2 {
		t.Fatalf("slow subscriber got %d CHANGED, want 1 or 2", got)
	}
	if slow.Err() != nil {
		t.Fatalf("CHANGED alone ended the slow subscriber: %v", slow.Err())
	}
}

func TestOverflowEndsTheSubscriptionWithError(t *testing.T) {
	ps := pubsub.New(pubsub.Config{QueueSize: 2})
	slow, _ := subscribe(t, ps, "d", "slow")
	for i := range 5 {
		s, _ := subscribe(t, ps, "d", fmt.Sprint("c", i))
		_ = s
	}
	select {
	case <-slow.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("overflowing subscriber was not ended")
	}
	if !errors.Is(slow.Err(), pubsub.ErrSlowSubscriber) || !fault.IsRetryable(slow.Err()) {
		t.Fatalf("Err() = %v", slow.Err())
	}
	if slices.Contains(ps.Watchers("d"), "slow") {
		t.Fatal("ended subscriber still listed as watcher")
	}
}

func TestEndClientAndClose(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	a, _ := subscribe(t, ps, "d", "a")
	b1, _ := subscribe(t, ps, "d", "b")
	b2, _ := subscribe(t, ps, "e", "b")
	receive(t, a)
	gone := errors.New("deactivated")
	ps.EndClient("b", gone)
	for _, s := range []*pubsub.Subscription{b1, b2} {
		<-s.Done()
		if !errors.Is(s.Err(), gone) {
			t.Fatalf("Err() = %v", s.Err())
		}
	}
	if ev := receive(t, a); ev != (pubsub.Event{Type: unwatched, Publisher: "b"}) {
		t.Fatalf("a got %v", ev)
	}
	shutdown := errors.New("shutdown")
	ps.Close(shutdown)
	<-a.Done()
	if !errors.Is(a.Err(), shutdown) {
		t.Fatalf("Err() = %v", a.Err())
	}
	if _, ok := <-a.Events(); ok {
		t.Fatal("events channel still open after end")
	}
	if _, _, err := ps.Subscribe("d", "c"); !errors.Is(err, fault.ErrShuttingDown) {
		t.Fatalf("Subscribe after Close: %v", err)
	}
}

func TestEndDocumentAndLiveCount(t *testing.T) {
	var live atomic.Int64
	ps := pubsub.New(pubsub.Config{Live: &live})
	a, _ := subscribe(t, ps, "d", "a")
	b, _ := subscribe(t, ps, "d", "b")
	other, _ := subscribe(t, ps, "e", "a")
	if live.Load() != 3 {
		t.Fatalf("live %d", live.Load())
	}
	lost := errors.New("moved")
	ps.EndDocument("d", lost)
	<-a.Done()
	<-b.Done()
	if !errors.Is(b.Err(), lost) || other.Err() != nil {
		t.Fatalf("errs %v / %v", b.Err(), other.Err())
	}
	if live.Load() != 1 {
		t.Fatalf("live %d after ending a document", live.Load())
	}
}

func TestConcurrentPublishSubscribe(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				s, _, err := ps.Subscribe("d", fmt.Sprint(i, "-", j%3))
				if err != nil {
					t.Error(err)
					return
				}
				ps.Publish("d", pubsub.Event{Type: changed, Publisher: "x"})
				s.Close()
			}
		}()
	}
	wg.Wait()
	if w := ps.Watchers("d"); len(w) != 0 {
		t.Fatalf("watchers left: %v", w)
	}
}

// BenchmarkDelivery measures one CHANGED published and received by every
// subscriber (publish to last delivery).
func BenchmarkDelivery(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			ps := pubsub.New(pubsub.Config{})
			acks := make(chan struct{}, n)
			var wg sync.WaitGroup
			for i := range n {
				s, _, err := ps.Subscribe("d", fmt.Sprint("c", i))
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ev := range s.Events() {
						if ev.Type == changed {
							acks <- struct{}{}
						}
					}
				}()
			}
			// Warm up: every subscriber has received something once.
			ps.Publish("d", pubsub.Event{Type: changed, Publisher: "p"})
			for range n {
				<-acks
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ps.Publish("d", pubsub.Event{Type: changed, Publisher: "p"})
				for range n {
					<-acks
				}
			}
			b.StopTimer()
			ps.Close(nil)
			wg.Wait()
		})
	}
}

func TestCoalescedChangedNamesTheLatestPublisher(t *testing.T) {
	ps := pubsub.New(pubsub.Config{QueueSize: 4})
	slow, _ := subscribe(t, ps, "d", "slow")
	for _, p := range []string{"a", "b", "c"} {
		ps.Publish("d", pubsub.Event{Type: changed, Publisher: p})
	}
	subscribe(t, ps, "d", "marker")
	var last pubsub.Event
	for ev := receive(t, slow); ev.Type != watched; ev = receive(t, slow) {
		last = ev
	}
	if last.Type != changed || last.Publisher != "c" {
		t.Fatalf("last event before the marker = %+v, want CHANGED from c", last)
	}
}

// A subscriber that waits on Ready and takes events with Next gets them in
// order, with CHANGED merged while queued, and none once the subscription
// ended: the way the Watch handlers read, with no goroutine per stream.
func TestReadyAndNextDeliverWithoutEvents(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	a, _ := subscribe(t, ps, "d", "a")
	subscribe(t, ps, "d", "b")
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "b"})
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "c"})
	var got []pubsub.Event
	for len(got) < 2 {
		select {
		case <-a.Ready():
		case <-time.After(5 * time.Second):
			t.Fatalf("not ready; got %v", got)
		}
		for ev, ok := a.Next(); ok; ev, ok = a.Next() {
			got = append(got, ev)
		}
	}
	want := []pubsub.Event{{Type: watched, Publisher: "b"}, {Type: changed, Publisher: "c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if ev, ok := a.Next(); ok {
		t.Fatalf("extra event %v", ev)
	}
	// An event queued after the drain signals Ready again.
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "b"})
	select {
	case <-a.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready after a new event")
	}
	ps.Publish("d", pubsub.Event{Type: unwatched, Publisher: "b"})
	a.Close()
	<-a.Done()
	if ev, ok := a.Next(); ok {
		t.Fatalf("event %v after the subscription ended", ev)
	}
}

// TestNotifyCallsOnEveryWakeAndAtTheEnd: Notify's function is called on the
// publisher's goroutine for each event that would signal Ready (not for a
// CHANGED merged into a queued one), and once when the subscription ends.
func TestNotifyCallsOnEveryWakeAndAtTheEnd(t *testing.T) {
	ps := pubsub.New(pubsub.Config{})
	a, _ := subscribe(t, ps, "d", "a")
	var calls atomic.Int32
	a.Notify(func() { calls.Add(1) })
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "b"})
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "c"}) // merged
	if got := calls.Load(); got != 1 {
		t.Fatalf("calls after two CHANGED = %d, want 1", got)
	}
	if ev, ok := a.Next(); !ok || ev.Publisher != "c" {
		t.Fatalf("Next = %v, %v", ev, ok)
	}
	ps.Publish("d", pubsub.Event{Type: changed, Publisher: "b"})
	if got := calls.Load(); got != 2 {
		t.Fatalf("calls after a CHANGED following the drain = %d, want 2", got)
	}
	if a.Ended() {
		t.Fatal("Ended before the end")
	}
	ps.EndDocument("d", fault.ErrShuttingDown)
	if !a.Ended() || !errors.Is(a.Err(), fault.ErrShuttingDown) {
		t.Fatalf("after the end: Ended %v, Err %v", a.Ended(), a.Err())
	}
	if got := calls.Load(); got != 3 {
		t.Fatalf("calls after the end = %d, want 3", got)
	}
	a.Close()
	if got := calls.Load(); got != 3 {
		t.Fatalf("calls after closing an ended subscription = %d, want 3", got)
	}
}
