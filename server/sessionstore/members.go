package sessionstore

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"
)

// reportMembers sends on ch the events that turn view into now, and updates
// view: what a store that polls its members (or re-reads them after a lost
// watch) reports. It returns false if ctx ended first.
func reportMembers(ctx context.Context, ch chan<- MemberEvent, view map[Member]bool, now []Member) bool {
	next := make(map[Member]bool, len(now))
	for _, m := range now {
		next[m] = true
	}
	var events []MemberEvent
	for m := range view {
		if !next[m] {
			events = append(events, MemberEvent{Type: MemberLeft, Member: m})
		}
	}
	for m := range next {
		if !view[m] {
			events = append(events, MemberEvent{Type: MemberJoined, Member: m})
		}
	}
	// Departures first, so that a restarted node shows as leaving, then
	// joining with its new incarnation.
	slices.SortFunc(events, func(a, b MemberEvent) int {
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
		if ev.Type == MemberLeft {
			delete(view, ev.Member)
		} else {
			view[ev.Member] = true
		}
	}
	return true
}

// PollMembers reports the members, then reads them again every interval and
// whenever kick fires, sending on ch what changed, until ctx ends: the watch
// of a store that has no change feed of its own. A failed read keeps the last
// view.
func PollMembers(ctx context.Context, initial []Member, interval time.Duration, kick <-chan struct{},
	read func(context.Context) ([]Member, error), log *slog.Logger, ch chan<- MemberEvent,
) {
	view := map[Member]bool{}
	if !reportMembers(ctx, ch, view, initial) {
		return
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-kick:
		}
		members, err := read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Debug("watch: reading members failed; keeping the last view", "err", err)
			}
			continue
		}
		if !reportMembers(ctx, ch, view, members) {
			return
		}
	}
}
