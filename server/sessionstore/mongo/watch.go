package mongo

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// WatchMembers implements sessionstore.Store. FerretDB has no change
// streams, so the watch re-reads the members every WatchInterval, and at
// once after this client's own registrations and revocations, and reports
// the difference from its last view. Sends block until the consumer takes
// them, so a slow consumer delays the next read rather than losing the final
// state.
func (s *Store) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	initial, err := s.Members(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stopWithStore := context.AfterFunc(s.base, cancel)
	kick := s.addKick()
	ch := make(chan sessionstore.MemberEvent, 16)
	ok := s.spawn(func() {
		defer close(ch)
		defer stopWithStore()
		defer s.removeKick(kick)
		defer cancel()
		s.watchLoop(ctx, initial, kick, ch)
	})
	if !ok {
		cancel()
		stopWithStore()
		s.removeKick(kick)
		return nil, fmt.Errorf("mongo watch members: %w", fault.ErrShuttingDown)
	}
	return ch, nil
}

func (s *Store) addKick() chan struct{} {
	k := make(chan struct{}, 1)
	s.kickMu.Lock()
	s.kicks[k] = struct{}{}
	s.kickMu.Unlock()
	return k
}

func (s *Store) removeKick(k chan struct{}) {
	s.kickMu.Lock()
	delete(s.kicks, k)
	s.kickMu.Unlock()
}

// kickWatches makes this client's watches read the members at once.
func (s *Store) kickWatches() {
	s.kickMu.Lock()
	defer s.kickMu.Unlock()
	for k := range s.kicks {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

func (s *Store) watchLoop(ctx context.Context, initial []sessionstore.Member, kick <-chan struct{}, ch chan<- sessionstore.MemberEvent) {
	view := map[sessionstore.Member]bool{}
	if !report(ctx, ch, view, initial) {
		return
	}
	ticker := time.NewTicker(s.cfg.WatchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-kick:
		}
		members, err := s.Members(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("watch: reading members failed; keeping the last view", "err", err)
			}
			continue
		}
		if !report(ctx, ch, view, members) {
			return
		}
	}
}

// report sends the events that turn view into now and updates view. It
// returns false if ctx ended first.
func report(ctx context.Context, ch chan<- sessionstore.MemberEvent, view map[sessionstore.Member]bool, now []sessionstore.Member) bool {
	next := make(map[sessionstore.Member]bool, len(now))
	for _, m := range now {
		next[m] = true
	}
	var events []sessionstore.MemberEvent
	for m := range view {
		if !next[m] {
			events = append(events, sessionstore.MemberEvent{Type: sessionstore.MemberLeft, Member: m})
		}
	}
	for m := range next {
		if !view[m] {
			events = append(events, sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: m})
		}
	}
	// Departures first, so that a restarted node shows as leaving, then
	// joining with its new incarnation.
	slices.SortFunc(events, func(a, b sessionstore.MemberEvent) int {
		return cmp.Or(
			-cmp.Compare(a.Type, b.Type),
			cmp.Compare(a.Member.Addr, b.Member.Addr),
			cmp.Compare(a.Member.Incarnation, b.Member.Incarnation),
		)
	})
	for _, ev := range events {
		select {
		case ch <- ev:
		case <-ctx.Done():
			return false
		}
		if ev.Type == sessionstore.MemberLeft {
			delete(view, ev.Member)
		} else {
			view[ev.Member] = true
		}
	}
	return true
}
