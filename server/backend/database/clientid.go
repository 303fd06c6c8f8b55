package database

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// ClientIDs hands out client IDs in the order of activation. The SDK breaks
// ties between concurrent edits by comparing actor IDs, so IDs must rise the
// way upstream's MongoDB ObjectIDs do, or the same session merges
// differently.
//
// An ID is 12 bytes, written as 24 lowercase hex characters:
//
//	bytes 0-3   seconds since the Unix epoch, big-endian (as in an ObjectID)
//	bytes 4-6   the fraction of that second, in units of 2^-24 s
//	bytes 7-9   random, fixed for the generator (tells nodes apart)
//	bytes 10-11 a counter within one time unit
//
// Within a generator the IDs strictly increase, even if the clock steps
// back. Time comes first and has a resolution of about 60 ns, so an ID made
// after a restart, or by another node later, is greater too as long as the
// clocks agree.
type ClientIDs struct {
	mu   sync.Mutex
	node [3]byte
	// last is the time unit of the previous ID (seconds<<24 | fraction),
	// seq its counter.
	last uint64
	seq  uint16
	now  func() time.Time
}

// NewClientIDs returns a generator with a random node part. now is the clock
// (time.Now if nil).
func NewClientIDs(now func() time.Time) *ClientIDs {
	if now == nil {
		now = time.Now
	}
	g := &ClientIDs{now: now}
	_, _ = rand.Read(g.node[:]) // crypto/rand.Read never fails on supported platforms
	return g
}

// Next returns a new ID, greater than every ID this generator returned.
func (g *ClientIDs) Next() string {
	t := g.now()
	unit := uint64(t.Unix())<<24 | uint64(t.Nanosecond())<<24/uint64(time.Second)
	g.mu.Lock()
	if unit <= g.last {
		unit = g.last
		if g.seq == 1<<16-1 {
			unit, g.seq = unit+1, 0
		} else {
			g.seq++
		}
	} else {
		g.seq = 0
	}
	g.last = unit
	seq := g.seq
	g.mu.Unlock()

	var b [12]byte
	binary.BigEndian.PutUint32(b[0:4], uint32(unit>>24))
	b[4], b[5], b[6] = byte(unit>>16), byte(unit>>8), byte(unit)
	copy(b[7:10], g.node[:])
	binary.BigEndian.PutUint16(b[10:12], seq)
	return hex.EncodeToString(b[:])
}
