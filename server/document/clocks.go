package document

import (
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Bounds on the logical clocks a pushed change may carry. The SDK's lamport
// is a signed 64-bit integer that every replica ticks past the largest it has
// seen, so one change near 2^63 would make every later change of every
// client overflow and be refused: the document could no longer be edited.
const (
	// MaxLamport is the largest lamport a change may bring into a document
	// whose clocks are below it: JavaScript's largest safe integer, far
	// beyond what real edits reach (one change per tick) and far below
	// where the SDK's clock overflows.
	MaxLamport = 1<<53 - 1
	// ClockStep is how far past the document's own lamport a change may
	// reach once the document is beyond MaxLamport (data written before
	// this bound): honest clients tick one per local change, so their
	// changes stay within it, and an overflow stays out of reach.
	ClockStep = 1 << 20
)

// checkClocks refuses the first lamport over limit (or negative) in a
// change: its ID, its version vector, and every ticket of its operations.
func checkClocks(c *api.Change, limit int64) error {
	var bad int64
	ok := func(l int64) bool {
		if l > limit || l < 0 {
			bad = l
			return false
		}
		return true
	}
	tick := func(ts ...*api.TimeTicket) bool {
		for _, t := range ts {
			if !ok(t.GetLamport()) {
				return false
			}
		}
		return true
	}
	tickMap := func(m map[string]*api.TimeTicket) bool {
		for _, t := range m {
			if !ok(t.GetLamport()) {
				return false
			}
		}
		return true
	}
	simple := func(v *api.JSONElementSimple) bool {
		return tick(v.GetCreatedAt(), v.GetMovedAt(), v.GetRemovedAt())
	}
	textPos := func(ps ...*api.TextNodePos) bool {
		for _, p := range ps {
			if !tick(p.GetCreatedAt()) {
				return false
			}
		}
		return true
	}
	treePos := func(ps ...*api.TreePos) bool {
		for _, p := range ps {
			if !tick(p.GetParentId().GetCreatedAt(), p.GetLeftSiblingId().GetCreatedAt()) {
				return false
			}
		}
		return true
	}
	treeNodes := func(contents []*api.TreeNodes) bool {
		for _, ns := range contents {
			for _, n := range ns.GetContent() {
				if !tick(n.GetId().GetCreatedAt(), n.GetRemovedAt(), n.GetInsPrevId().GetCreatedAt(), n.GetInsNextId().GetCreatedAt()) {
					return false
				}
			}
		}
		return true
	}
	valid := ok(c.GetId().GetLamport())
	for _, l := range c.GetId().GetVersionVector().GetVector() {
		valid = valid && ok(l)
	}
	for _, op := range c.GetOperations() {
		if !valid {
			break
		}
		switch b := op.GetBody().(type) {
		case *api.Operation_Set_:
			o := b.Set
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && simple(o.GetValue())
		case *api.Operation_Add_:
			o := b.Add
			valid = tick(o.GetParentCreatedAt(), o.GetPrevCreatedAt(), o.GetExecutedAt()) && simple(o.GetValue())
		case *api.Operation_Move_:
			o := b.Move
			valid = tick(o.GetParentCreatedAt(), o.GetPrevCreatedAt(), o.GetCreatedAt(), o.GetExecutedAt())
		case *api.Operation_Remove_:
			o := b.Remove
			valid = tick(o.GetParentCreatedAt(), o.GetCreatedAt(), o.GetExecutedAt())
		case *api.Operation_Edit_:
			o := b.Edit
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && textPos(o.GetFrom(), o.GetTo()) && tickMap(o.GetCreatedAtMapByActor())
		case *api.Operation_Style_:
			o := b.Style
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && textPos(o.GetFrom(), o.GetTo()) && tickMap(o.GetCreatedAtMapByActor())
		case *api.Operation_Increase_:
			o := b.Increase
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && simple(o.GetValue())
		case *api.Operation_TreeEdit_:
			o := b.TreeEdit
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && treePos(o.GetFrom(), o.GetTo()) &&
				tickMap(o.GetCreatedAtMapByActor()) && treeNodes(o.GetContents())
		case *api.Operation_TreeStyle_:
			o := b.TreeStyle
			valid = tick(o.GetParentCreatedAt(), o.GetExecutedAt()) && treePos(o.GetFrom(), o.GetTo()) && tickMap(o.GetCreatedAtMapByActor())
		case *api.Operation_ArraySet_:
			o := b.ArraySet
			valid = tick(o.GetParentCreatedAt(), o.GetCreatedAt(), o.GetExecutedAt()) && simple(o.GetValue())
		}
	}
	if !valid {
		return fmt.Errorf("%w: lamport %d is beyond %d", ErrInvalidOperation, bad, limit)
	}
	return nil
}
