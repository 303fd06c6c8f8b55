package document

import (
	"fmt"
	"math"

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

// ApplyChanges applies changes in server order. It refuses the first change that does not
// apply (wrapping one of the sentinel errors); the document is then left partly changed and
// must be discarded.
func (d *Document) ApplyChanges(changes []*api.Change) error {
	for i, c := range changes {
		if err := d.applyChange(c); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
	}
	return nil
}

// ApplyPushed applies changes clients pushed, in server order, as
// ApplyChanges does, after refusing any change whose clocks (its lamport, its
// version vector, any ticket of its operations) reach past what the SDK can
// follow (see MaxLamport). Stored changes are replayed with ApplyChanges, so
// a document that already carries such a change is still served.
func (d *Document) ApplyPushed(changes []*api.Change) error {
	for i, c := range changes {
		limit := int64(MaxLamport)
		if d.lamport > MaxLamport-ClockStep {
			limit = d.lamport + ClockStep
			if d.lamport > math.MaxInt64-ClockStep {
				limit = math.MaxInt64
			}
		}
		if err := checkClocks(c, limit); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		if err := d.applyChange(c); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
	}
	return nil
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
