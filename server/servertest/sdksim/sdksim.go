// Package sdksim keeps the document-side state of one simulated SDK client:
// it numbers changes, keys their version vectors, builds change packs and
// takes in answers the way the JS SDK does. It makes no calls itself, so the
// same state drives the backend directly in its tests and benchmarks, the
// wire-level test client and the load tool.
package sdksim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// ErrProtocol marks an answer that breaks the protocol: no checkpoint, an
// acknowledgement of a change never made, a pulled change without a version
// vector.
var ErrProtocol = errors.New("answer breaks the protocol")

// Client is one SDK client attached to (at most) one document. Its state is
// exported so that a test can stage what a misbehaving or unlucky client
// would send. It is used by one goroutine at a time.
type Client struct {
	// ID is the client ID the server gave; Actor is its bytes, the actor of
	// the client's changes.
	ID    string
	Actor []byte

	// DocKey names the attached document.
	DocKey string

	// Lamport is the clock of the newest change made or pulled.
	Lamport int64
	// LastSeq is the client_seq of the newest local change.
	LastSeq uint32
	// Acked is the highest client_seq the server acknowledged.
	Acked uint32
	// ServerSeq is the highest server_seq the server sent.
	ServerSeq int64
	// Pending holds the local changes not acknowledged yet, in order.
	Pending []*api.Change
}

// New returns the state of the client the server named id (hex).
func New(id string) (*Client, error) {
	actor, err := hex.DecodeString(id)
	if err != nil {
		return nil, fmt.Errorf("client ID %q is not hex: %w", id, err)
	}
	return &Client{ID: id, Actor: actor}, nil
}

// VectorKey is how version vectors on the wire name an actor: the base64 of
// its bytes, as the SDK's converter writes it.
func VectorKey(actor []byte) string { return base64.StdEncoding.EncodeToString(actor) }

// ChangeID is the ID the SDK gives a change of actor: its client_seq and
// lamport, and a version vector holding the actor's own clock.
func ChangeID(actor []byte, clientSeq uint32, lamport int64) *api.ChangeID {
	return &api.ChangeID{
		ClientSeq:     clientSeq,
		Lamport:       lamport,
		ActorId:       actor,
		VersionVector: &api.VersionVector{Vector: map[string]int64{VectorKey(actor): lamport}},
	}
}

// RootTicket is the creation ticket of a document's root object, as the SDK
// writes it: lamport 0 and the all-zero initial actor.
func RootTicket() *api.TimeTicket { return &api.TimeTicket{ActorId: make([]byte, 12)} }

// Attached starts a new attachment to docKey: like the SDK's new Document, it
// begins from empty checkpoints and numbers its changes from 1 again.
func (c *Client) Attached(docKey string) {
	c.DocKey = docKey
	c.LastSeq, c.Acked, c.ServerSeq, c.Lamport, c.Pending = 0, 0, 0, 0, nil
}

// next records a change with the next client_seq and lamport and nothing in
// it yet.
func (c *Client) next() *api.Change {
	c.Lamport++
	c.LastSeq++
	ch := &api.Change{Id: ChangeID(c.Actor, c.LastSeq, c.Lamport)}
	c.Pending = append(c.Pending, ch)
	return ch
}

// NewEmpty records a change with neither operations nor presence.
func (c *Client) NewEmpty() *api.Change { return c.next() }

// NewPresence records a presence PUT of data.
func (c *Client) NewPresence(data map[string]string) *api.Change {
	ch := c.next()
	ch.PresenceChange = &api.PresenceChange{
		Type:     api.PresenceChange_CHANGE_TYPE_PUT,
		Presence: &api.Presence{Data: data},
	}
	return ch
}

// NewClear records the presence CLEAR the SDK sends with a detach.
func (c *Client) NewClear() *api.Change {
	ch := c.next()
	ch.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	return ch
}

// NewSet records one Set of key on the root object to an integer, the new
// client_seq (little-endian, as the SDK encodes integers).
func (c *Client) NewSet(key string) *api.Change {
	ch := c.next()
	ticket := &api.TimeTicket{Lamport: c.Lamport, ActorId: c.Actor}
	ch.Operations = []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		// The server applies every change and refuses a parent it does not
		// hold, so the parent is the root as the SDK names it.
		ParentCreatedAt: RootTicket(),
		Key:             key,
		Value: &api.JSONElementSimple{
			CreatedAt: ticket,
			Type:      api.ValueType_VALUE_TYPE_INTEGER,
			Value:     binary.LittleEndian.AppendUint32(nil, c.LastSeq),
		},
		ExecutedAt: ticket,
	}}}}
	return ch
}

// Pack is the change pack the SDK would send now: every pending change and
// the checkpoint it holds.
func (c *Client) Pack() *api.ChangePack {
	return &api.ChangePack{
		DocumentKey: c.DocKey,
		Checkpoint:  &api.Checkpoint{ServerSeq: c.ServerSeq, ClientSeq: c.Acked + uint32(len(c.Pending))},
		Changes:     c.Pending,
	}
}

// Absorb takes in an answer's change pack and returns the changes it pulled:
// acknowledged changes leave Pending, the checkpoint only rises, and Lamport
// follows the pulled changes. An answer that breaks the protocol is an
// ErrProtocol; the changes pulled before the bad one are returned with it.
func (c *Client) Absorb(p *api.ChangePack) ([]*api.Change, error) {
	if p == nil || p.GetCheckpoint() == nil {
		return nil, fmt.Errorf("client %s: %w: no change pack with a checkpoint", c.ID, ErrProtocol)
	}
	cp := p.GetCheckpoint()
	if cp.GetClientSeq() > c.LastSeq {
		return nil, fmt.Errorf("client %s: %w: client_seq %d acknowledged, newest change is %d", c.ID, ErrProtocol, cp.GetClientSeq(), c.LastSeq)
	}
	c.Acked = max(c.Acked, cp.GetClientSeq())
	c.ServerSeq = max(c.ServerSeq, cp.GetServerSeq())
	kept := c.Pending[:0]
	for _, ch := range c.Pending {
		if ch.GetId().GetClientSeq() > c.Acked {
			kept = append(kept, ch)
		}
	}
	c.Pending = kept
	pulled := p.GetChanges()
	for i, ch := range pulled {
		if ch.GetId().GetVersionVector() == nil {
			return pulled[:i], fmt.Errorf("client %s: %w: pulled change %s has no version vector", c.ID, ErrProtocol, ChangeKey(ch))
		}
		c.Lamport = max(c.Lamport, ch.GetId().GetLamport())
	}
	return pulled, nil
}

// ChangeKey names a change by its actor (hex) and client_seq.
func ChangeKey(ch *api.Change) string {
	return fmt.Sprintf("%s/%d", hex.EncodeToString(ch.GetId().GetActorId()), ch.GetId().GetClientSeq())
}
