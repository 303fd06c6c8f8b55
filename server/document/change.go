package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// changeID is the identity and clocks of a change.
type changeID struct {
	clientSeq uint32
	lamport   int64
	actor     crdt.ActorID
	vv        crdt.VersionVector
}

// hasClocks reports whether the change moves logical time, as the SDK's ChangeID.hasClocks:
// presence-only changes carry an empty vector and do not.
func (id changeID) hasClocks() bool { return len(id.vv) > 0 && id.lamport != 0 }

func decodeChangeID(id *api.ChangeID, actorKeys map[string]crdt.ActorID) (changeID, error) {
	if id == nil {
		return changeID{}, fmt.Errorf("%w: change without an id", ErrInvalidOperation)
	}
	actor, err := crdt.ActorIDFromBytes(id.GetActorId())
	if err != nil {
		return changeID{}, fmt.Errorf("%w: change actor: %w", ErrInvalidOperation, err)
	}
	vv, err := vectorFromPB(id.GetVersionVector(), actorKeys)
	if err != nil {
		return changeID{}, err
	}
	return changeID{clientSeq: id.GetClientSeq(), lamport: id.GetLamport(), actor: actor, vv: vv}, nil
}

// applyChange runs one change: its operations in order, then its presence part, then the
// document's clocks follow it.
func (d *Document) applyChange(c *api.Change) error {
	if c == nil {
		return fmt.Errorf("%w: nil change", ErrInvalidOperation)
	}
	id, err := decodeChangeID(c.GetId(), d.actorKeys)
	if err != nil {
		return err
	}
	pc, err := decodePresenceChange(c.GetPresenceChange())
	if err != nil {
		return err
	}
	for i, pbOp := range c.GetOperations() {
		op, err := decodeOperation(pbOp)
		if err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if err := op.Execute(d.root, id.vv); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
	}
	if pc != nil {
		if pc.clear {
			delete(d.presences, id.actor)
		} else {
			d.presences[id.actor] = pc.data
		}
	}
	d.syncClocks(id)
	return nil
}

// syncClocks advances the document's clocks past a change, as a replica's change ID does
// (the SDK's and upstream's syncClocks): the document's own lamport goes past the change's,
// its vector takes the element-wise maximum and records that lamport for the document's
// own actor, the all-zero initial actor.
func (d *Document) syncClocks(id changeID) {
	if !id.hasClocks() {
		return
	}
	if id.lamport > d.lamport {
		d.lamport = id.lamport + 1
	} else {
		d.lamport++
	}
	for a, l := range id.vv {
		if cur, ok := d.vv[a]; !ok || l > cur {
			d.vv[a] = l
		}
	}
	d.vv[crdt.InitialActorID] = d.lamport
}
