package redis

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/mediocregopher/radix/v4"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// WatchMembers implements sessionstore.Store. It re-reads the live members
// every WatchInterval (an expired key announces nothing, so only a re-read
// sees it) and at once when a registration or revocation is published, and
// reports the difference from the last view. Sends block until the consumer
// takes them, so a slow consumer delays the next read rather than losing the
// final state.
func (s *Store) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	initial, err := s.Members(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stopWithStore := context.AfterFunc(s.base, cancel)
	kick := make(chan struct{}, 1)
	ch := make(chan sessionstore.MemberEvent, 16)
	ok := s.spawn(func() {
		defer close(ch)
		defer stopWithStore()
		var listening sync.WaitGroup
		listening.Go(func() { s.listen(ctx, kick) })
		s.watchLoop(ctx, initial, kick, ch)
		cancel()
		listening.Wait()
	})
	if !ok {
		cancel()
		stopWithStore()
		return nil, fmt.Errorf("redis watch members: %w", fault.ErrShuttingDown)
	}
	return ch, nil
}

func (s *Store) watchLoop(ctx context.Context, initial []sessionstore.Member, kick <-chan struct{}, ch chan<- sessionstore.MemberEvent) {
	sessionstore.PollMembers(ctx, initial, s.cfg.WatchInterval, kick, s.Members, s.log, ch)
}

// resubscribeDelay is the pause between subscription attempts.
const resubscribeDelay = time.Second

// listen subscribes to the membership channel and pokes kick for every
// message and after every (re)subscription, since messages may have been
// missed before it. It re-dials after a failure until ctx ends.
func (s *Store) listen(ctx context.Context, kick chan<- struct{}) {
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		err := s.subscribe(ctx, poke, poke)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("watch: membership subscription failed; re-dialling", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(resubscribeDelay):
		}
	}
}

// subscribe runs one subscription: subscribed is called once it is in
// place, message for every message. It returns when the connection fails
// or ctx ends.
func (s *Store) subscribe(ctx context.Context, subscribed, message func()) error {
	dialCtx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	conn, err := s.dialer.Dial(dialCtx, "tcp", s.cfg.Addr)
	cancel()
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	ps := radix.PubSubConfig{}.New(conn)
	defer ps.Close()
	subCtx, cancel := context.WithTimeout(ctx, s.cfg.CommandTimeout)
	defer cancel()
	// radix returns from Subscribe before Redis has processed it, and a
	// message published in between is lost (a join nobody re-reads until the
	// next interval). A probe channel of our own, subscribed by the same
	// command, tells when the subscription is in place: PUBLISH to it
	// reports a receiver only then.
	probe := s.channel + ":probe:" + rand.Text()
	if err := ps.Subscribe(subCtx, s.channel, probe); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	for {
		var receivers int
		if err := s.do(subCtx, radix.Cmd(&receivers, "PUBLISH", probe, "")); err != nil {
			return fmt.Errorf("confirm subscription: %w", err)
		}
		if receivers > 0 {
			break
		}
		select {
		case <-subCtx.Done():
			return fmt.Errorf("confirm subscription: %w", subCtx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	cancel()
	subscribed()
	for {
		if _, err := ps.Next(ctx); err != nil {
			return fmt.Errorf("next message: %w", err)
		}
		message()
	}
}
