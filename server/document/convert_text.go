package document

import (
	"fmt"
	"sort"
	"unicode/utf8"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// textTicket decodes a ticket the text wire messages require, naming the field on error.
func textTicket(pb *api.TimeTicket, what string) (crdt.Ticket, error) {
	t, err := ticketFromPB(pb)
	if err != nil {
		return t, fmt.Errorf("%s: %w", what, err)
	}
	return t, nil
}

// textOptionalTicket decodes a ticket that may be absent (zero then).
func textOptionalTicket(pb *api.TimeTicket, what string) (crdt.Ticket, error) {
	t, err := optionalTicketFromPB(pb)
	if err != nil {
		return t, fmt.Errorf("%s: %w", what, err)
	}
	return t, nil
}

func textNodeIDFromPB(pb *api.TextNodeID, what string) (crdt.TextNodeID, error) {
	if pb == nil {
		return crdt.TextNodeID{}, fmt.Errorf("%w: %s: missing node id", ErrInvalidOperation, what)
	}
	t, err := textTicket(pb.GetCreatedAt(), what)
	if err != nil {
		return crdt.TextNodeID{}, err
	}
	return crdt.TextNodeID{CreatedAt: t, Offset: int64(pb.GetOffset())}, nil
}

func textNodeIDToPB(id crdt.TextNodeID) *api.TextNodeID {
	return &api.TextNodeID{CreatedAt: ticketToPB(id.CreatedAt), Offset: int32(id.Offset)}
}

func textPosFromPB(pb *api.TextNodePos, what string) (crdt.TextPos, error) {
	if pb == nil {
		return crdt.TextPos{}, fmt.Errorf("%w: %s: missing position", ErrInvalidOperation, what)
	}
	t, err := textTicket(pb.GetCreatedAt(), what)
	if err != nil {
		return crdt.TextPos{}, err
	}
	return crdt.TextPos{
		ID:             crdt.TextNodeID{CreatedAt: t, Offset: int64(pb.GetOffset())},
		RelativeOffset: int64(pb.GetRelativeOffset()),
	}, nil
}

// textAttrsFromPB orders an operation's attributes by key (a protobuf map has no order of its
// own) and refuses values that are not JSON: the SDK parses every value and would fail.
func textAttrsFromPB(m map[string]string, what string) ([]crdt.TextAttr, error) {
	if len(m) == 0 {
		return nil, nil
	}
	attrs := make([]crdt.TextAttr, 0, len(m))
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: %s: attribute is not UTF-8", ErrInvalidOperation, what)
		}
		if _, ok := crdt.ParseJSONValue(v); !ok {
			return nil, fmt.Errorf("%w: %s: attribute %q is not JSON", ErrInvalidOperation, what, k)
		}
		attrs = append(attrs, crdt.TextAttr{Key: k, Value: v})
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
	return attrs, nil
}

// checkUTF8 refuses strings a protobuf decoder would have refused (for changes built in
// memory rather than read from the wire).
func checkUTF8(what string, ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: %s: not UTF-8", ErrInvalidOperation, what)
		}
	}
	return nil
}

// checkCreatedAtMap validates the legacy created_at_map_by_actor field. The SDK 0.7.7 neither
// sends nor reads it (it decides by version vectors), so it only has to be well formed.
func checkCreatedAtMap(m map[string]*api.TimeTicket, what string) error {
	for k, t := range m {
		if _, err := crdt.ActorIDFromHex(k); err != nil {
			return fmt.Errorf("%w: %s: created_at_map_by_actor: %w", ErrInvalidOperation, what, err)
		}
		if _, err := textTicket(t, what+": created_at_map_by_actor"); err != nil {
			return err
		}
	}
	return nil
}

// textFromPB reads a text element of a snapshot, as the SDK's fromText does: nodes in order,
// each linked to the piece its ins_prev_id names when the text holds it, attributes set as
// live values (the SDK ignores is_removed here).
func textFromPB(pb *api.JSONElement_Text) (*crdt.Text, error) {
	if pb == nil {
		return nil, fmt.Errorf("%w: text: empty element", ErrInvalidOperation)
	}
	createdAt, err := textTicket(pb.GetCreatedAt(), "text created_at")
	if err != nil {
		return nil, err
	}
	movedAt, err := textOptionalTicket(pb.GetMovedAt(), "text moved_at")
	if err != nil {
		return nil, err
	}
	removedAt, err := textOptionalTicket(pb.GetRemovedAt(), "text removed_at")
	if err != nil {
		return nil, err
	}
	text := crdt.NewText(createdAt)
	text.SetMovedAt(movedAt)
	text.SetRemovedAt(removedAt)

	var keys []string
	for i, pn := range pb.GetNodes() {
		what := fmt.Sprintf("text node %d", i)
		id, err := textNodeIDFromPB(pn.GetId(), what)
		if err != nil {
			return nil, err
		}
		nodeRemovedAt, err := textOptionalTicket(pn.GetRemovedAt(), what+" removed_at")
		if err != nil {
			return nil, err
		}
		var insPrev *crdt.TextNodeID
		if pn.GetInsPrevId() != nil {
			p, err := textNodeIDFromPB(pn.GetInsPrevId(), what+" ins_prev_id")
			if err != nil {
				return nil, err
			}
			insPrev = &p
		}
		node, err := text.AppendNode(id, pn.GetValue(), nodeRemovedAt, insPrev)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidOperation, what, err)
		}
		keys = keys[:0]
		for k := range pn.GetAttributes() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			a := pn.GetAttributes()[k]
			updatedAt, err := textTicket(a.GetUpdatedAt(), what+" attribute "+k)
			if err != nil {
				return nil, err
			}
			node.Value().SetAttr(k, a.GetValue(), updatedAt)
		}
	}
	return text, nil
}

// textToPB writes a text element for a snapshot: every node, tombstones included, with the
// piece it was split from (ins_prev_id, which the SDK reads but does not write), so that a
// replica reading the snapshot resolves positions as one that applied the edits. Removed
// attributes are left out: the SDK's reader takes every attribute as live (it ignores
// is_removed), so writing one would bring it back.
func textToPB(t *crdt.Text) *api.JSONElement_Text {
	pb := &api.JSONElement_Text{
		Nodes:     make([]*api.TextNode, 0, t.Len()),
		CreatedAt: ticketToPB(t.CreatedAt()),
		MovedAt:   optionalTicketToPB(t.MovedAt()),
		RemovedAt: optionalTicketToPB(t.RemovedAt()),
	}
	// A text holds many small nodes: allocate their messages in blocks.
	nodes := make([]api.TextNode, t.Len())
	ids := make([]api.TextNodeID, t.Len())
	tickets := newTicketBlock(t.Len())
	i := 0
	t.Nodes(func(n *crdt.TextNode) {
		v := n.Value()
		pn := &nodes[i]
		id := &ids[i]
		i++
		id.CreatedAt, id.Offset = tickets.next(n.ID().CreatedAt), int32(n.ID().Offset)
		pn.Id = id
		pn.Value = v.Content()
		if rm := n.RemovedAt(); !rm.IsZero() {
			pn.RemovedAt = ticketToPB(rm)
		}
		if p := n.InsPrev(); p != nil {
			pn.InsPrevId = textNodeIDToPB(p.ID())
		}
		if a := v.Attrs(); a != nil && a.Len() > 0 {
			pn.Attributes = make(map[string]*api.NodeAttr, a.Len())
			for _, an := range a.Nodes() {
				if !an.IsRemoved() {
					pn.Attributes[an.Key()] = &api.NodeAttr{Value: an.Value(), UpdatedAt: ticketToPB(an.UpdatedAt())}
				}
			}
		}
		pb.Nodes = append(pb.Nodes, pn)
	})
	return pb
}

// ticketBlock hands out wire tickets whose messages and actor bytes share two allocations.
type ticketBlock struct {
	tickets []api.TimeTicket
	actors  []byte
}

func newTicketBlock(n int) *ticketBlock {
	return &ticketBlock{tickets: make([]api.TimeTicket, n), actors: make([]byte, n*crdt.ActorIDSize)}
}

func (b *ticketBlock) next(t crdt.Ticket) *api.TimeTicket {
	pt := &b.tickets[0]
	b.tickets = b.tickets[1:]
	actor := b.actors[:crdt.ActorIDSize:crdt.ActorIDSize]
	b.actors = b.actors[crdt.ActorIDSize:]
	copy(actor, t.Actor[:])
	pt.Lamport, pt.Delimiter, pt.ActorId = t.Lamport, t.Delimiter, actor
	return pt
}
