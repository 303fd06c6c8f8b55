package mongo

import (
	"context"
	"fmt"

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
	sessionstore.PollMembers(ctx, initial, s.cfg.WatchInterval, kick, s.Members, s.log, ch)
}
