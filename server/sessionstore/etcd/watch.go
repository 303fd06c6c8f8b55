package etcd

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// memberView is the member set a watch follows, by member key.
type memberView struct {
	mu    sync.Mutex
	byKey map[string]sessionstore.Member
	wake  chan struct{} // signalled after every change
}

func (v *memberView) set(byKey map[string]sessionstore.Member) {
	v.mu.Lock()
	v.byKey = byKey
	v.mu.Unlock()
	v.signal()
}

func (v *memberView) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

func (v *memberView) snapshot() []sessionstore.Member {
	v.mu.Lock()
	ms := slices.Collect(maps.Values(v.byKey))
	v.mu.Unlock()
	slices.SortFunc(ms, compareMembers)
	return ms
}

// WatchMembers reports the live members, then every change, until ctx ends
// or the store is closed. One goroutine follows etcd (re-listing after a
// compaction or a failed watch); another sends the consumer the difference
// between what it was last told and the current set, so a slow consumer
// skips intermediate states but not the final one.
func (s *Store) WatchMembers(ctx context.Context) (<-chan sessionstore.MemberEvent, error) {
	const op = "watch members"
	if err := s.check(ctx, op); err != nil {
		return nil, err
	}
	byKey, rev, err := s.listMembers(ctx)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	stopOnClose := context.AfterFunc(s.ctx, cancel)

	view := &memberView{byKey: byKey, wake: make(chan struct{}, 1)}
	view.signal()
	out := make(chan sessionstore.MemberEvent, 16)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.followMembers(wctx, view, rev)
	}()
	go func() {
		defer s.wg.Done()
		defer close(out)
		defer stopOnClose()
		defer cancel()
		sendMemberChanges(wctx, view, out)
	}()
	return out, nil
}

// listMembers reads the member records and the revision they were read at.
func (s *Store) listMembers(ctx context.Context) (map[string]sessionstore.Member, int64, error) {
	resp, err := s.cli.Get(ctx, s.members, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	byKey := make(map[string]sessionstore.Member, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		m, err := decode(string(kv.Key), kv.Value)
		if err != nil {
			s.log.Warn("skipping unreadable member record", "err", err)
			continue
		}
		byKey[string(kv.Key)] = m
	}
	return byKey, resp.Header.Revision, nil
}

// followMembers applies etcd's member events to view from revision rev on,
// and re-lists whenever the watch breaks.
func (s *Store) followMembers(ctx context.Context, view *memberView, rev int64) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Without a leader a member cannot tell whether it is partitioned;
		// requiring one turns that into a watch error and a re-list.
		wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), s.members, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for wr := range wch {
			if wr.CompactRevision != 0 || wr.Err() != nil {
				s.log.Info("member watch broke; listing again", "err", wr.Err(), "compacted", wr.CompactRevision)
				break
			}
			if len(wr.Events) == 0 {
				continue
			}
			view.mu.Lock()
			for _, ev := range wr.Events {
				key := string(ev.Kv.Key)
				switch ev.Type {
				case clientv3.EventTypePut:
					m, err := decode(key, ev.Kv.Value)
					if err != nil {
						s.log.Warn("skipping unreadable member record", "err", err)
						continue
					}
					view.byKey[key] = m
				case clientv3.EventTypeDelete:
					delete(view.byKey, key)
				}
			}
			view.mu.Unlock()
			view.signal()
			rev = wr.Header.Revision
			backoff = 100 * time.Millisecond
		}
		for ctx.Err() == nil {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			byKey, r, err := s.listMembers(lctx)
			cancel()
			if err == nil {
				view.set(byKey)
				rev = r
				break
			}
			s.log.Info("listing members failed; retrying", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// sendMemberChanges tells out how the view differs from what out was told,
// each time the view changes, until ctx ends.
func sendMemberChanges(ctx context.Context, view *memberView, out chan<- sessionstore.MemberEvent) {
	told := make(map[sessionstore.Member]struct{})
	for {
		select {
		case <-ctx.Done():
			return
		case <-view.wake:
		}
		now := view.snapshot()
		var evs []sessionstore.MemberEvent
		live := make(map[sessionstore.Member]struct{}, len(now))
		for _, m := range now {
			live[m] = struct{}{}
		}
		left := make([]sessionstore.Member, 0)
		for m := range told {
			if _, ok := live[m]; !ok {
				left = append(left, m)
			}
		}
		slices.SortFunc(left, compareMembers)
		for _, m := range left {
			evs = append(evs, sessionstore.MemberEvent{Type: sessionstore.MemberLeft, Member: m})
		}
		for _, m := range now {
			if _, ok := told[m]; !ok {
				evs = append(evs, sessionstore.MemberEvent{Type: sessionstore.MemberJoined, Member: m})
			}
		}
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
			if ev.Type == sessionstore.MemberJoined {
				told[ev.Member] = struct{}{}
			} else {
				delete(told, ev.Member)
			}
		}
	}
}
