// Package testclock is a clock a test moves forward by hand, so that what
// depends on time passing (deactivating silent clients) happens when the
// test says, not after a real wait.
package testclock

import (
	"sync/atomic"
	"time"
)

// Clock is the real time plus what the test added with Advance. It is safe
// for concurrent use; its zero value is the real time.
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time; pass it where a config takes a func() time.Time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
