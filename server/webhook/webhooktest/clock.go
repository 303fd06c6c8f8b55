// Package webhooktest provides a clock that tests move by hand.
package webhooktest

import (
	"sort"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/webhook"
)

// Clock is a webhook.Clock whose time moves only with Advance. Timers due by
// then run in Advance's goroutine, in order of their due time.
type Clock struct {
	mu     sync.Mutex
	armed  *sync.Cond // broadcast whenever a timer is added
	now    time.Time
	timers []*timer
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock {
	c := &Clock{now: start}
	c.armed = sync.NewCond(&c.mu)
	return c
}

// AwaitTimers blocks until at least n timers are pending, so a test moves
// the clock only once the code under test waits on it.
func (c *Clock) AwaitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.armed.Wait()
	}
}

type timer struct {
	c    *Clock
	when time.Time
	f    func()
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) webhook.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, when: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.armed.Broadcast()
	return t
}

// Pending is the number of timers not yet run or stopped.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDue is how far the earliest pending timer is from Now (0 when none):
// what the code under test waits for.
func (c *Clock) NextDue() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Duration
	for i, t := range c.timers {
		if d := t.when.Sub(c.now); i == 0 || d < next {
			next = d
		}
	}
	return next
}

// Advance moves the clock forward by d, running every timer that falls due,
// those scheduled by the timers themselves included.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].when.Before(c.timers[j].when) })
		if len(c.timers) == 0 || c.timers[0].when.After(target) {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.mu.Unlock()
		t.f()
	}
}

// Stop removes the timer if it has not run.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, o := range t.c.timers {
		if o == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
