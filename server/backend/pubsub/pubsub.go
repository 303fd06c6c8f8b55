// Package pubsub delivers document events (CHANGED, WATCHED, UNWATCHED) to
// the clients watching a document on this node.
//
// Publishing never blocks: events go into a small per-subscriber queue, which
// the subscriber drains with Next when Ready signals, or when the function it
// gave Notify is called (no goroutine per subscriber: an idle stream costs
// only its queue's state). A CHANGED event already
// waiting in a queue absorbs later ones (a CHANGED only says "pull now"), so a
// slow subscriber costs one queued entry however many changes are stored.
// WATCHED and UNWATCHED cannot be merged; a subscriber whose queue of them
// overflows is ended with an error instead of silently losing one, so its
// client reconnects and learns the watcher list afresh.
package pubsub

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/fault"
)

// Sentinel errors reported by Subscribe and Subscription.Err. Subscribe on a
// closed pub/sub answers fault.ErrShuttingDown.
var (
	// ErrSlowSubscriber: the subscriber let its event queue overflow. It is
	// retryable (fault.IsRetryable): the client reconnects and catches up.
	ErrSlowSubscriber = fault.NewRetryable("subscriber too slow: event queue overflowed")
	// ErrTooManyWatchers: the document has as many watching clients as
	// SubscribeBounded allows.
	ErrTooManyWatchers = errors.New("too many watchers")
)

// Event is one document event; Publisher is the client that caused it.
type Event struct {
	Type      api.DocEventType
	Publisher string
}

// Config holds the options of a PubSub.
type Config struct {
	// QueueSize bounds the WATCHED/UNWATCHED events waiting for one
	// subscriber (default 256).
	QueueSize int
	// Live, when set, tracks the number of live subscriptions.
	Live *atomic.Int64
}

// PubSub routes events of documents to their subscribers.
type PubSub struct {
	cfg Config

	mu       sync.RWMutex
	closed   bool
	topics   map[string]*topic                     // by document ID
	byClient map[string]map[*Subscription]struct{} // by client ID
}

// topic is the set of subscriptions of one document.
type topic struct {
	subs     map[*Subscription]struct{}
	watchers map[string]int // client ID -> live subscriptions of it
}

// New returns a PubSub with cfg's options.
func New(cfg Config) *PubSub {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 256
	}
	return &PubSub{
		cfg:      cfg,
		topics:   make(map[string]*topic),
		byClient: make(map[string]map[*Subscription]struct{}),
	}
}

// Subscription is one client's subscription to one document's events.
type Subscription struct {
	ps       *PubSub
	docID    string
	clientID string
	limit    int

	// out and the goroutine filling it exist only once Events is called.
	pumpOnce sync.Once
	out      chan Event

	mu sync.Mutex
	// wake and done are made on the first call of Ready and Done: a
	// subscriber woken by Notify never needs them.
	wake          chan struct{}
	done          chan struct{}
	buf           []Event
	head          int
	changedQueued bool
	// changedAt is the index in buf of the queued CHANGED while changedQueued.
	changedAt int
	ended     bool
	err       error
	notify    func()
}

// Events returns the subscriber's events on a channel, closed after the
// subscription ends. It starts a goroutine that hands the queued events
// over; a subscriber that waits on Ready and takes them with Next needs none.
func (s *Subscription) Events() <-chan Event {
	s.pumpOnce.Do(func() {
		s.out = make(chan Event)
		go s.pump()
	})
	return s.out
}

// Ready receives a value when events were queued since it last did: the
// subscriber then takes them with Next until Next reports none left. An
// event queued after that empty Next signals Ready again.
func (s *Subscription) Ready() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
		if s.head < len(s.buf) {
			s.wake <- struct{}{}
		}
	}
	return s.wake
}

// Notify has f called whenever Ready signals and once when the
// subscription ends, so that a subscriber can be woken without a goroutine
// waiting on the channels. f runs on the publisher's goroutine and must not
// block. Events queued before Notify do not call f: the subscriber takes
// them with Next after calling it.
func (s *Subscription) Notify(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = f
}

// Done is closed when the subscription ends; Err then says why.
func (s *Subscription) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.ended {
			close(s.done)
		}
	}
	return s.done
}

// Ended reports whether the subscription has ended, as a closed Done would.
func (s *Subscription) Ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// Err returns why the subscription was ended by the pub/sub, or nil while it
// runs or when the subscriber closed it itself.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close unsubscribes, announcing UNWATCHED to the other watchers when this was
// the client's last subscription to the document. Safe to call repeatedly.
func (s *Subscription) Close() { s.ps.end(s, nil, true) }

// Subscribe subscribes the client to the document's events. watchers lists
// the clients watching the document, the new subscriber included. If the
// client was not watching yet, the others receive WATCHED.
func (ps *PubSub) Subscribe(docID, clientID string) (*Subscription, []string, error) {
	return ps.SubscribeBounded(docID, clientID, 0)
}

// SubscribeBounded is Subscribe, refused with ErrTooManyWatchers when the
// document already has maxWatchers clients watching and this one is not
// among them (0: no bound). Clients are counted, not streams, so a client
// whose reconnecting stream overlaps its old one is not refused.
func (ps *PubSub) SubscribeBounded(docID, clientID string, maxWatchers int) (*Subscription, []string, error) {
	s := &Subscription{
		ps:       ps,
		docID:    docID,
		clientID: clientID,
		limit:    ps.cfg.QueueSize,
	}
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil, nil, fmt.Errorf("pubsub closed: %w", fault.ErrShuttingDown)
	}
	t := ps.topics[docID]
	if t != nil && maxWatchers > 0 && t.watchers[clientID] == 0 && len(t.watchers) >= maxWatchers {
		n := len(t.watchers) // read under the lock: the map changes once it is released
		ps.mu.Unlock()
		return nil, nil, fmt.Errorf("%d clients watch the document already: %w", n, ErrTooManyWatchers)
	}
	if t == nil {
		t = &topic{subs: make(map[*Subscription]struct{}), watchers: make(map[string]int)}
		ps.topics[docID] = t
	}
	var overflowed []*Subscription
	if t.watchers[clientID] == 0 {
		overflowed = t.publish(Event{Type: api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_WATCHED, Publisher: clientID}, nil)
	}
	t.subs[s] = struct{}{}
	t.watchers[clientID]++
	watchers := make([]string, 0, len(t.watchers))
	for id := range t.watchers {
		watchers = append(watchers, id)
	}
	mine := ps.byClient[clientID]
	if mine == nil {
		mine = make(map[*Subscription]struct{})
		ps.byClient[clientID] = mine
	}
	mine[s] = struct{}{}
	ps.mu.Unlock()

	if ps.cfg.Live != nil {
		ps.cfg.Live.Add(1)
	}
	ps.endOverflowed(overflowed)
	return s, watchers, nil
}

// Publish sends the event to the document's subscribers other than the
// publisher. It never blocks on a subscriber.
func (ps *PubSub) Publish(docID string, ev Event) {
	ps.mu.RLock()
	t := ps.topics[docID]
	var overflowed []*Subscription
	if t != nil {
		overflowed = t.publish(ev, nil)
	}
	ps.mu.RUnlock()
	ps.endOverflowed(overflowed)
}

// Watchers returns the clients watching the document now.
func (ps *PubSub) Watchers(docID string) []string {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	t := ps.topics[docID]
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t.watchers))
	for id := range t.watchers {
		out = append(out, id)
	}
	return out
}

// Watching reports whether the client has a live subscription to the
// document.
func (ps *PubSub) Watching(docID, clientID string) bool {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	t := ps.topics[docID]
	return t != nil && t.watchers[clientID] > 0
}

// EndDocument ends every subscription of the document with err, without
// announcing UNWATCHED (the watchers all go at once).
func (ps *PubSub) EndDocument(docID string, err error) {
	ps.mu.RLock()
	var subs []*Subscription
	if t := ps.topics[docID]; t != nil {
		for s := range t.subs {
			subs = append(subs, s)
		}
	}
	ps.mu.RUnlock()
	for _, s := range subs {
		ps.end(s, err, false)
	}
}

// EndClient ends every subscription of the client with err, announcing
// UNWATCHED to the other watchers of its documents.
func (ps *PubSub) EndClient(clientID string, err error) {
	ps.endClient(clientID, "", err)
}

// EndWatch ends the client's subscriptions to one document with err,
// announcing UNWATCHED to the document's other watchers. A client that left
// a document may still have a stream the server believes open (a half-open
// connection); it must not keep the client counted as watching.
func (ps *PubSub) EndWatch(clientID, docID string, err error) {
	ps.endClient(clientID, docID, err)
}

// endClient ends the client's subscriptions, to docID only unless it is "".
func (ps *PubSub) endClient(clientID, docID string, err error) {
	ps.mu.RLock()
	subs := make([]*Subscription, 0, len(ps.byClient[clientID]))
	for s := range ps.byClient[clientID] {
		if docID == "" || s.docID == docID {
			subs = append(subs, s)
		}
	}
	ps.mu.RUnlock()
	for _, s := range subs {
		ps.end(s, err, true)
	}
}

// Close ends every subscription with err and refuses new ones.
func (ps *PubSub) Close(err error) {
	ps.mu.Lock()
	ps.closed = true
	var subs []*Subscription
	for _, t := range ps.topics {
		for s := range t.subs {
			subs = append(subs, s)
		}
	}
	ps.mu.Unlock()
	for _, s := range subs {
		ps.end(s, err, false)
	}
}

// publish queues ev for every subscriber of the topic but the publisher and
// returns those that overflowed. The caller holds ps.mu (read or write).
func (t *topic) publish(ev Event, overflowed []*Subscription) []*Subscription {
	for s := range t.subs {
		if s.clientID == ev.Publisher {
			continue
		}
		if !s.enqueue(ev) {
			overflowed = append(overflowed, s)
		}
	}
	return overflowed
}

func (ps *PubSub) endOverflowed(subs []*Subscription) {
	for _, s := range subs {
		ps.end(s, ErrSlowSubscriber, true)
	}
}

// enqueue queues ev and signals Ready. It reports false when the queue
// overflowed.
func (s *Subscription) enqueue(ev Event) bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return true
	}
	if ev.Type == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
		if s.changedQueued {
			// One queued CHANGED stands for every change so far; it names the
			// latest publisher, so a waiter for that publisher's change sees it.
			s.buf[s.changedAt].Publisher = ev.Publisher
			s.mu.Unlock()
			return true
		}
		s.changedQueued, s.changedAt = true, len(s.buf)
	} else if len(s.buf)-s.head >= s.limit {
		s.mu.Unlock()
		return false
	}
	s.buf = append(s.buf, ev)
	wake, notify := s.wake, s.notify
	s.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default: // the subscriber is signalled already
		}
	}
	if notify != nil {
		notify()
	}
	return true
}

// Next pops the oldest queued event; false when none is queued (or the
// subscription ended).
func (s *Subscription) Next() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.buf) {
		return Event{}, false
	}
	ev := s.buf[s.head]
	s.buf[s.head] = Event{}
	s.head++
	if s.head == len(s.buf) {
		s.buf, s.head = s.buf[:0], 0
	}
	if ev.Type == api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_CHANGED {
		// Handed over: a later CHANGED must be delivered again.
		s.changedQueued = false
	}
	return ev, true
}

// pump hands queued events to the subscriber until the subscription ends.
func (s *Subscription) pump() {
	defer close(s.out)
	wake, done := s.Ready(), s.Done()
	for {
		select {
		case <-wake:
		case <-done:
			return
		}
		for {
			ev, ok := s.Next()
			if !ok {
				break
			}
			select {
			case s.out <- ev:
			case <-done:
				return
			}
		}
	}
}

// end ends the subscription once: records err, closes Done, removes it from
// its topic and, if announce and it was the client's last subscription to the
// document, publishes UNWATCHED to the others.
func (ps *PubSub) end(s *Subscription, err error, announce bool) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.err = err
	s.buf, s.head = nil, 0
	if s.done != nil {
		close(s.done)
	}
	notify := s.notify
	s.notify = nil
	s.mu.Unlock()
	if notify != nil {
		notify()
	}

	if ps.cfg.Live != nil {
		ps.cfg.Live.Add(-1)
	}
	var overflowed []*Subscription
	ps.mu.Lock()
	if mine := ps.byClient[s.clientID]; mine != nil {
		delete(mine, s)
		if len(mine) == 0 {
			delete(ps.byClient, s.clientID)
		}
	}
	if t := ps.topics[s.docID]; t != nil {
		if _, ok := t.subs[s]; ok {
			delete(t.subs, s)
			t.watchers[s.clientID]--
			if t.watchers[s.clientID] <= 0 {
				delete(t.watchers, s.clientID)
				if announce {
					overflowed = t.publish(Event{
						Type:      api.DocEventType_DOC_EVENT_TYPE_DOCUMENT_UNWATCHED,
						Publisher: s.clientID,
					}, nil)
				}
			}
			if len(t.subs) == 0 {
				delete(ps.topics, s.docID)
			}
		}
	}
	ps.mu.Unlock()
	ps.endOverflowed(overflowed)
}
