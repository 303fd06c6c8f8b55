// Package document is the server's copy of a Yorkie document: it decodes the changes clients
// push (api.Change), applies their operations to a crdt.Root exactly as the JS SDK does,
// refuses what does not apply, and encodes snapshots the SDK can read.
package document

import (
	"errors"

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

// errNotYet marks the parts of the API still being written.
var errNotYet = errors.New("not implemented yet")

// Document is a document's state on the server: its element tree, the presences of its
// clients and the version vector of the changes applied so far.
type Document struct {
	root      *crdt.Root
	presences map[crdt.ActorID]map[string]string
	vv        crdt.VersionVector
}

// New returns an empty document: a root object created at the initial ticket.
func New() *Document {
	return &Document{
		root:      crdt.NewRoot(crdt.NewObject(crdt.InitialTicket)),
		presences: make(map[crdt.ActorID]map[string]string),
		vv:        make(crdt.VersionVector),
	}
}

// FromSnapshot builds a document from an api.Snapshot in its binary encoding.
func FromSnapshot(snapshot []byte) (*Document, error) {
	_ = snapshot
	return nil, errNotYet
}

// ApplyChanges applies changes in server order. On error the document is left partly
// changed and must be discarded.
func (d *Document) ApplyChanges(changes []*api.Change) error {
	_ = changes
	return errNotYet
}

// Snapshot encodes the document as a binary api.Snapshot.
func (d *Document) Snapshot() ([]byte, error) { return nil, errNotYet }

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

// VersionVector is the element-wise maximum of the applied changes' vectors.
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
