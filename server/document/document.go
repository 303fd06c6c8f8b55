// Package document is the server's copy of a Yorkie document: it decodes the changes clients
// push (api.Change), applies their operations to a crdt.Root exactly as the JS SDK does,
// refuses what does not apply, and encodes snapshots the SDK can read.
package document

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Sentinel errors callers test with errors.Is. Every refusal of a change wraps one of them.
var (
	// ErrInvalidOperation reports an operation with an empty or unknown body, or a malformed
	// value, ticket or position.
	ErrInvalidOperation = errors.New("invalid operation")
	// ErrElementNotFound reports an operation aimed at a parent, target or position the
	// document does not hold.
	ErrElementNotFound = errors.New("element not found")
	// ErrWrongElementType reports an operation aimed at an element of the wrong type.
	ErrWrongElementType = errors.New("wrong element type")
	// ErrRemoveRoot reports an operation that would remove or replace the root object.
	ErrRemoveRoot = errors.New("cannot remove or replace the root object")
)

// Document is a document's state on the server: its element tree, the presences of its
// clients and its logical clocks.
type Document struct {
	root      *crdt.Root
	presences map[crdt.ActorID]map[string]string
	// lamport and vv are the document's own clocks, advanced by every change that has
	// clocks as a replica's are (see syncClocks).
	lamport int64
	vv      crdt.VersionVector
	// actorKeys caches the actors of the base64 keys of changes' vectors.
	actorKeys map[string]crdt.ActorID
}

// New returns an empty document: a root object created at the initial ticket.
func New() *Document {
	return &Document{
		root:      crdt.NewRoot(crdt.NewObject(crdt.InitialTicket)),
		presences: make(map[crdt.ActorID]map[string]string),
		vv:        make(crdt.VersionVector),
		actorKeys: make(map[string]crdt.ActorID),
	}
}

// FromSnapshot builds a document from an api.Snapshot in its binary encoding, as the SDK's
// bytesToSnapshot reads it. Empty bytes are an empty document. A snapshot does not carry
// clocks: the document's vector starts empty (see FromSnapshotAt). A snapshot that cannot be
// read is refused with an error wrapping ErrInvalidOperation.
func FromSnapshot(snapshot []byte) (*Document, error) {
	return FromSnapshotAt(snapshot, nil)
}

// FromSnapshotAt builds a document from a snapshot and the version vector of the document
// it was taken of, so that later changes advance the clocks from there.
func FromSnapshotAt(snapshot []byte, vv crdt.VersionVector) (*Document, error) {
	d := New()
	if vv != nil {
		d.vv = vv.Copy()
		d.lamport = vv[crdt.InitialActorID]
	}
	if len(snapshot) == 0 {
		return d, nil
	}
	var pb api.Snapshot
	if err := proto.Unmarshal(snapshot, &pb); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %w", ErrInvalidOperation, err)
	}
	o := pb.GetRoot().GetJsonObject()
	if o == nil {
		return nil, fmt.Errorf("%w: snapshot root is not an object", ErrInvalidOperation)
	}
	obj, err := objectFromPB(o)
	if err != nil {
		return nil, fmt.Errorf("snapshot root: %w", err)
	}
	d.root = crdt.NewRoot(obj)
	for k, p := range pb.GetPresences() {
		actor, err := crdt.ActorIDFromHex(k)
		if err != nil {
			return nil, fmt.Errorf("%w: snapshot presence: %w", ErrInvalidOperation, err)
		}
		data := make(map[string]string, len(p.GetData()))
		for dk, dv := range p.GetData() {
			data[dk] = dv
		}
		d.presences[actor] = data
	}
	return d, nil
}

// Snapshot encodes the document as a binary api.Snapshot (deterministically): the root
// object with every element and tombstone not collected yet, and the presences.
func (d *Document) Snapshot() ([]byte, error) {
	pb := &api.Snapshot{
		Root:      elementToPB(d.root.Object()),
		Presences: make(map[string]*api.Presence, len(d.presences)),
	}
	for a, p := range d.presences {
		data := make(map[string]string, len(p))
		for k, v := range p {
			data[k] = v
		}
		pb.Presences[a.String()] = &api.Presence{Data: data}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return b, nil
}

// JSON is the document as the SDK's toSortedJSON writes it.
func (d *Document) JSON() string { return d.root.JSON() }

// GarbageCollect purges the tombstones every replica has seen (minSynced) and returns how
// many it purged.
func (d *Document) GarbageCollect(minSynced crdt.VersionVector) int {
	return d.root.GarbageCollect(minSynced)
}

// GarbageLen is the number of tombstones not collected yet, as the SDK's getGarbageLen.
func (d *Document) GarbageLen() int { return d.root.GarbageLen() }

// Size is the document's size as the SDK's getDocSize.
func (d *Document) Size() crdt.DocSize { return d.root.Size() }

// VersionVector is the document's vector: the element-wise maximum of the applied changes'
// vectors, with the document's own lamport under the all-zero initial actor, as upstream's
// server documents have it.
func (d *Document) VersionVector() crdt.VersionVector { return d.vv.Copy() }

// Presences returns each client's presence (values are the JSON strings clients send).
func (d *Document) Presences() map[crdt.ActorID]map[string]string {
	out := make(map[crdt.ActorID]map[string]string, len(d.presences))
	for a, p := range d.presences {
		c := make(map[string]string, len(p))
		for k, v := range p {
			c[k] = v
		}
		out[a] = c
	}
	return out
}
