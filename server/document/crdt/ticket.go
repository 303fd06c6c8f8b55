// Package crdt holds Yorkie's replicated data types as the server builds them: logical time
// (tickets and version vectors), the element tree under the root object (Object, Array,
// Primitive, Counter, Text, Tree) and the collection of their tombstones. Its semantics follow
// the JS SDK exactly; the wire encoding lives in the parent package, document.
package crdt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// ActorIDSize is the length of an actor ID: the 12 bytes of a client ID.
const ActorIDSize = 12

// ActorID names the replica that made a change. It is the client ID's bytes; tie-breaks
// between concurrent edits compare actor IDs byte by byte, as the SDK compares their hex.
type ActorID [ActorIDSize]byte

// InitialActorID is the all-zero actor of the tickets every document starts with.
var InitialActorID = ActorID{}

// MaxActorID is the all-ones actor of MaxTicket.
var MaxActorID = ActorID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ErrInvalidActorID reports an actor ID that is not 12 bytes (24 hex characters).
var ErrInvalidActorID = errors.New("invalid actor id")

// ActorIDFromBytes reads an actor ID from its wire bytes.
func ActorIDFromBytes(b []byte) (ActorID, error) {
	var a ActorID
	if len(b) != ActorIDSize {
		return a, fmt.Errorf("%w: %d bytes", ErrInvalidActorID, len(b))
	}
	copy(a[:], b)
	return a, nil
}

// ActorIDFromHex reads an actor ID from its lowercase hex form (a client ID).
func ActorIDFromHex(s string) (ActorID, error) {
	var a ActorID
	if len(s) != 2*ActorIDSize {
		return a, fmt.Errorf("%w: %q", ErrInvalidActorID, s)
	}
	if _, err := hex.Decode(a[:], []byte(s)); err != nil {
		return a, fmt.Errorf("%w: %q", ErrInvalidActorID, s)
	}
	return a, nil
}

// String is the actor's lowercase hex, the form the SDK uses everywhere.
func (a ActorID) String() string { return hex.EncodeToString(a[:]) }

// Compare orders actors by their bytes.
func (a ActorID) Compare(b ActorID) int { return bytes.Compare(a[:], b[:]) }

// Lamport and delimiter bounds, as the SDK declares them.
const (
	MaxLamport   = int64(9223372036854775807)
	MaxDelimiter = uint32(4294967295)
)

// TicketSize is the bytes a ticket counts for in document sizes (lamport, delimiter, actor).
const TicketSize = 8 + 4 + 12

// Ticket is a logical timestamp: a Lamport clock, the actor that issued it and a delimiter
// that tells apart the tickets of one change. The zero Ticket is InitialTicket; fields that
// may be unset (movedAt, removedAt) use the zero Ticket for "none", because no operation can
// be at or before the initial ticket.
type Ticket struct {
	Lamport   int64
	Delimiter uint32
	Actor     ActorID
}

// InitialTicket is the creation time of the root object.
var InitialTicket = Ticket{}

// MaxTicket is after every other ticket.
var MaxTicket = Ticket{Lamport: MaxLamport, Delimiter: MaxDelimiter, Actor: MaxActorID}

// Compare orders tickets by lamport, then actor, then delimiter.
func (t Ticket) Compare(o Ticket) int {
	switch {
	case t.Lamport > o.Lamport:
		return 1
	case t.Lamport < o.Lamport:
		return -1
	}
	if c := t.Actor.Compare(o.Actor); c != 0 {
		return c
	}
	switch {
	case t.Delimiter > o.Delimiter:
		return 1
	case t.Delimiter < o.Delimiter:
		return -1
	}
	return 0
}

// After reports whether t is strictly after o.
func (t Ticket) After(o Ticket) bool { return t.Compare(o) > 0 }

// IsZero reports whether t is the zero (initial) ticket, which stands for "unset" in the
// optional ticket fields of elements.
func (t Ticket) IsZero() bool { return t == Ticket{} }

// Key is the ticket's ID string, "lamport:actorhex:delimiter", as the SDK's toIDString.
func (t Ticket) Key() string {
	return strconv.FormatInt(t.Lamport, 10) + ":" + t.Actor.String() + ":" +
		strconv.FormatUint(uint64(t.Delimiter), 10)
}

// String is Key, for messages.
func (t Ticket) String() string { return t.Key() }
