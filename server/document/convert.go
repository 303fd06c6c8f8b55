package document

import (
	"encoding/base64"
	"fmt"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// ticketFromPB reads a required ticket.
func ticketFromPB(t *api.TimeTicket) (crdt.Ticket, error) {
	if t == nil {
		return crdt.Ticket{}, fmt.Errorf("%w: missing ticket", ErrInvalidOperation)
	}
	actor, err := crdt.ActorIDFromBytes(t.GetActorId())
	if err != nil {
		return crdt.Ticket{}, fmt.Errorf("%w: ticket: %w", ErrInvalidOperation, err)
	}
	return crdt.Ticket{Lamport: t.GetLamport(), Delimiter: t.GetDelimiter(), Actor: actor}, nil
}

// optionalTicketFromPB reads a ticket that may be absent (zero).
func optionalTicketFromPB(t *api.TimeTicket) (crdt.Ticket, error) {
	if t == nil {
		return crdt.Ticket{}, nil
	}
	return ticketFromPB(t)
}

// ticketToPB writes a ticket as the SDK does: always with its 12 actor bytes.
func ticketToPB(t crdt.Ticket) *api.TimeTicket {
	actor := t.Actor
	return &api.TimeTicket{Lamport: t.Lamport, Delimiter: t.Delimiter, ActorId: actor[:]}
}

// optionalTicketToPB writes a ticket that may be unset (zero) as absent.
func optionalTicketToPB(t crdt.Ticket) *api.TimeTicket {
	if t.IsZero() {
		return nil
	}
	return ticketToPB(t)
}

// VersionVectorFromPB reads a wire version vector: keys are the standard base64 of actor
// IDs. A nil vector stays nil: a change without one has seen everything.
func VersionVectorFromPB(v *api.VersionVector) (crdt.VersionVector, error) {
	return vectorFromPB(v, nil)
}

// vectorFromPB reads a version vector, remembering decoded keys in cache when it is not nil
// (a document sees the same few actors in every change).
func vectorFromPB(v *api.VersionVector, cache map[string]crdt.ActorID) (crdt.VersionVector, error) {
	if v == nil {
		// Absent is not empty: the SDK treats a change without a vector as one
		// that has seen everything, an empty vector as one that has seen nothing.
		return nil, nil
	}
	out := make(crdt.VersionVector, len(v.GetVector()))
	for k, l := range v.GetVector() {
		a, ok := cache[k]
		if !ok {
			var err error
			if a, err = actorFromBase64(k); err != nil {
				return nil, err
			}
			if cache != nil {
				cache[k] = a
			}
		}
		out[a] = l
	}
	return out, nil
}

func actorFromBase64(k string) (crdt.ActorID, error) {
	b, err := base64.StdEncoding.DecodeString(k)
	if err != nil {
		// Node's Buffer, which the SDK decodes with, also takes unpadded keys.
		if b, err = base64.RawStdEncoding.DecodeString(k); err != nil {
			return crdt.ActorID{}, fmt.Errorf("%w: version vector key %q", ErrInvalidOperation, k)
		}
	}
	a, err := crdt.ActorIDFromBytes(b)
	if err != nil {
		return crdt.ActorID{}, fmt.Errorf("%w: version vector: %w", ErrInvalidOperation, err)
	}
	return a, nil
}

// VersionVectorToPB writes a version vector as the SDK does.
func VersionVectorToPB(v crdt.VersionVector) *api.VersionVector {
	m := make(map[string]int64, len(v))
	for a, l := range v {
		m[base64.StdEncoding.EncodeToString(a[:])] = l
	}
	return &api.VersionVector{Vector: m}
}

// counterTypes maps the wire's counter value types to the counter kinds.
var counterTypes = map[api.ValueType]crdt.CounterType{
	api.ValueType_VALUE_TYPE_INTEGER_CNT:       crdt.CounterInt,
	api.ValueType_VALUE_TYPE_LONG_CNT:          crdt.CounterLong,
	api.ValueType_VALUE_TYPE_INTEGER_DEDUP_CNT: crdt.CounterIntDedup,
}

func counterTypeToPB(t crdt.CounterType) api.ValueType {
	switch t {
	case crdt.CounterLong:
		return api.ValueType_VALUE_TYPE_LONG_CNT
	case crdt.CounterIntDedup:
		return api.ValueType_VALUE_TYPE_INTEGER_DEDUP_CNT
	}
	return api.ValueType_VALUE_TYPE_INTEGER_CNT
}

func isPrimitiveType(t api.ValueType) bool {
	return t >= api.ValueType_VALUE_TYPE_NULL && t <= api.ValueType_VALUE_TYPE_DATE
}

// simpleFromPB builds the value of a Set, Add, ArraySet or Increase, as the SDK's
// fromElementSimple: a nested object or array comes whole from its encoded JSONElement
// (whose own tickets count, not the simple value's), a text starts empty, a tree comes from
// its encoding.
func simpleFromPB(s *api.JSONElementSimple) (crdt.Element, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: missing value", ErrInvalidOperation)
	}
	switch t := s.GetType(); {
	case t == api.ValueType_VALUE_TYPE_JSON_OBJECT, t == api.ValueType_VALUE_TYPE_JSON_ARRAY:
		var e api.JSONElement
		if err := proto.Unmarshal(s.GetValue(), &e); err != nil {
			return nil, fmt.Errorf("%w: nested value: %w", ErrInvalidOperation, err)
		}
		if t == api.ValueType_VALUE_TYPE_JSON_OBJECT {
			o := e.GetJsonObject()
			if o == nil {
				return nil, fmt.Errorf("%w: object value that holds no object", ErrInvalidOperation)
			}
			return objectFromPB(o)
		}
		a := e.GetJsonArray()
		if a == nil {
			return nil, fmt.Errorf("%w: array value that holds no array", ErrInvalidOperation)
		}
		return arrayFromPB(a)
	case t == api.ValueType_VALUE_TYPE_TEXT:
		createdAt, err := ticketFromPB(s.GetCreatedAt())
		if err != nil {
			return nil, err
		}
		return crdt.NewText(createdAt), nil
	case t == api.ValueType_VALUE_TYPE_TREE:
		createdAt, err := ticketFromPB(s.GetCreatedAt())
		if err != nil {
			return nil, err
		}
		return treeFromBytes(s.GetValue(), createdAt)
	case isPrimitiveType(t):
		createdAt, err := ticketFromPB(s.GetCreatedAt())
		if err != nil {
			return nil, err
		}
		p, err := crdt.NewPrimitive(crdt.PrimitiveType(t), s.GetValue(), createdAt)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
		}
		return p, nil
	default:
		kind, ok := counterTypes[t]
		if !ok {
			return nil, fmt.Errorf("%w: value type %d", ErrInvalidOperation, t)
		}
		createdAt, err := ticketFromPB(s.GetCreatedAt())
		if err != nil {
			return nil, err
		}
		c, err := crdt.NewCounter(kind, s.GetValue(), createdAt)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
		}
		return c, nil
	}
}

// elementTickets are the three tickets every encoded element carries.
type elementTickets interface {
	GetCreatedAt() *api.TimeTicket
	GetMovedAt() *api.TimeTicket
	GetRemovedAt() *api.TimeTicket
}

// readTickets reads an encoded element's tickets: creation is required.
func readTickets(e elementTickets) (createdAt, movedAt, removedAt crdt.Ticket, err error) {
	if createdAt, err = ticketFromPB(e.GetCreatedAt()); err != nil {
		return
	}
	if movedAt, err = optionalTicketFromPB(e.GetMovedAt()); err != nil {
		return
	}
	removedAt, err = optionalTicketFromPB(e.GetRemovedAt())
	return
}

// setTickets gives a decoded element its moved and removed tickets, as the SDK's
// converter does after building it.
func setTickets(elem crdt.Element, movedAt, removedAt crdt.Ticket) {
	elem.SetMovedAt(movedAt)
	elem.SetRemovedAt(removedAt)
}

// elementFromPB builds an element and everything under it from its encoding, as the SDK's
// fromElement.
func elementFromPB(e *api.JSONElement) (crdt.Element, error) {
	switch body := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		if body.JsonObject == nil {
			break
		}
		return objectFromPB(body.JsonObject)
	case *api.JSONElement_JsonArray:
		if body.JsonArray == nil {
			break
		}
		return arrayFromPB(body.JsonArray)
	case *api.JSONElement_Primitive_:
		if body.Primitive == nil {
			break
		}
		return primitiveFromPB(body.Primitive)
	case *api.JSONElement_Counter_:
		if body.Counter == nil {
			break
		}
		return counterFromPB(body.Counter)
	case *api.JSONElement_Text_:
		if body.Text == nil {
			break
		}
		return textFromPB(body.Text)
	case *api.JSONElement_Tree_:
		if body.Tree == nil {
			break
		}
		return treeFromPB(body.Tree)
	}
	return nil, fmt.Errorf("%w: element without a known body", ErrInvalidOperation)
}

// objectFromPB builds an object, setting each member under its key at the member's
// positioned ticket, as the SDK does (which gives every member a moved ticket).
func objectFromPB(o *api.JSONElement_JSONObject) (*crdt.Object, error) {
	createdAt, movedAt, removedAt, err := readTickets(o)
	if err != nil {
		return nil, err
	}
	obj := crdt.NewObject(createdAt)
	for _, n := range o.GetNodes() {
		elem, err := elementFromPB(n.GetElement())
		if err != nil {
			return nil, err
		}
		obj.Set(n.GetKey(), elem, elem.PositionedAt())
	}
	setTickets(obj, movedAt, removedAt)
	return obj, nil
}

// arrayFromPB builds an array with its dead positions and moved elements.
func arrayFromPB(a *api.JSONElement_JSONArray) (*crdt.Array, error) {
	createdAt, movedAt, removedAt, err := readTickets(a)
	if err != nil {
		return nil, err
	}
	arr := crdt.NewArray(createdAt)
	for _, n := range a.GetNodes() {
		if n.GetElement() == nil {
			if n.GetPositionCreatedAt() == nil || n.GetPositionRemovedAt() == nil {
				return nil, fmt.Errorf("%w: dead array position without its tickets", ErrInvalidOperation)
			}
			pc, err := ticketFromPB(n.GetPositionCreatedAt())
			if err != nil {
				return nil, err
			}
			pr, err := ticketFromPB(n.GetPositionRemovedAt())
			if err != nil {
				return nil, err
			}
			arr.AppendDeadPosition(pc, pr)
			continue
		}
		elem, err := elementFromPB(n.GetElement())
		if err != nil {
			return nil, err
		}
		if n.GetPositionMovedAt() != nil {
			if n.GetPositionCreatedAt() == nil {
				return nil, fmt.Errorf("%w: moved array element without its position", ErrInvalidOperation)
			}
			pc, err := ticketFromPB(n.GetPositionCreatedAt())
			if err != nil {
				return nil, err
			}
			pm, err := ticketFromPB(n.GetPositionMovedAt())
			if err != nil {
				return nil, err
			}
			arr.AppendMoved(elem, pc, pm)
			continue
		}
		if err := arr.Append(elem); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
		}
	}
	setTickets(arr, movedAt, removedAt)
	return arr, nil
}

func primitiveFromPB(p *api.JSONElement_Primitive) (*crdt.Primitive, error) {
	createdAt, movedAt, removedAt, err := readTickets(p)
	if err != nil {
		return nil, err
	}
	if !isPrimitiveType(p.GetType()) {
		return nil, fmt.Errorf("%w: primitive of type %d", ErrInvalidOperation, p.GetType())
	}
	prim, err := crdt.NewPrimitive(crdt.PrimitiveType(p.GetType()), p.GetValue(), createdAt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
	}
	setTickets(prim, movedAt, removedAt)
	return prim, nil
}

func counterFromPB(c *api.JSONElement_Counter) (*crdt.Counter, error) {
	createdAt, movedAt, removedAt, err := readTickets(c)
	if err != nil {
		return nil, err
	}
	kind, ok := counterTypes[c.GetType()]
	if !ok {
		return nil, fmt.Errorf("%w: counter of type %d", ErrInvalidOperation, c.GetType())
	}
	counter, err := crdt.NewCounter(kind, c.GetValue(), createdAt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
	}
	setTickets(counter, movedAt, removedAt)
	if kind == crdt.CounterIntDedup && len(c.GetHllRegisters()) > 0 {
		if err := counter.RestoreHLL(c.GetHllRegisters()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOperation, err)
		}
	}
	return counter, nil
}

// elementToPB encodes an element and everything under it, as the SDK's toElement.
func elementToPB(elem crdt.Element) *api.JSONElement {
	switch e := elem.(type) {
	case *crdt.Object:
		nodes := make([]*api.RHTNode, 0, e.Len())
		e.Members(func(key string, m crdt.Element) {
			nodes = append(nodes, &api.RHTNode{Key: key, Element: elementToPB(m)})
		})
		return &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
			Nodes:     nodes,
			CreatedAt: ticketToPB(e.CreatedAt()),
			MovedAt:   optionalTicketToPB(e.MovedAt()),
			RemovedAt: optionalTicketToPB(e.RemovedAt()),
		}}}
	case *crdt.Array:
		return &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: &api.JSONElement_JSONArray{
			Nodes:     rgaNodesToPB(e),
			CreatedAt: ticketToPB(e.CreatedAt()),
			MovedAt:   optionalTicketToPB(e.MovedAt()),
			RemovedAt: optionalTicketToPB(e.RemovedAt()),
		}}}
	case *crdt.Primitive:
		return &api.JSONElement{Body: &api.JSONElement_Primitive_{Primitive: &api.JSONElement_Primitive{
			Type:      api.ValueType(e.Type()),
			Value:     e.Bytes(),
			CreatedAt: ticketToPB(e.CreatedAt()),
			MovedAt:   optionalTicketToPB(e.MovedAt()),
			RemovedAt: optionalTicketToPB(e.RemovedAt()),
		}}}
	case *crdt.Counter:
		return &api.JSONElement{Body: &api.JSONElement_Counter_{Counter: &api.JSONElement_Counter{
			Type:         counterTypeToPB(e.Type()),
			Value:        e.Bytes(),
			CreatedAt:    ticketToPB(e.CreatedAt()),
			MovedAt:      optionalTicketToPB(e.MovedAt()),
			RemovedAt:    optionalTicketToPB(e.RemovedAt()),
			HllRegisters: e.HLLRegisters(),
		}}}
	case *crdt.Text:
		return &api.JSONElement{Body: &api.JSONElement_Text_{Text: textToPB(e)}}
	case *crdt.Tree:
		return &api.JSONElement{Body: &api.JSONElement_Tree_{Tree: treeToPB(e)}}
	}
	return &api.JSONElement{}
}

// rgaNodesToPB encodes an array's positions in order so that the SDK's reader (fromArray)
// and ours rebuild them in that order.
//
// The reader appends a dead position or a moved element (one that carries its position
// tickets) at the end, but places a never-moved element by an insertion after the identity
// of the last node read, and a moved element's identity is its creation ticket, which
// still names the position the move emptied until that position is collected. A
// never-moved element right after a moved one whose emptied position came earlier would
// land behind that old position. Such an element is written with its own position tickets
// (positionCreatedAt = positionMovedAt = its creation ticket), which appends it and means
// the same as never moved: it is positioned at its creation, and every move of it comes
// later and wins. Everywhere else the bytes are the SDK's own.
func rgaNodesToPB(a *crdt.Array) []*api.RGANode {
	var nodes []*api.RGANode
	// written holds the positions written so far: what the reader's index holds.
	written := make(map[crdt.Ticket]bool)
	// misleads is set when the last node written is a moved element whose emptied first
	// position was written before it.
	misleads := false
	a.Nodes(func(m crdt.Element, posCreatedAt, posMovedAt, posRemovedAt crdt.Ticket) {
		written[posCreatedAt] = true
		if m == nil {
			nodes = append(nodes, &api.RGANode{
				PositionCreatedAt: ticketToPB(posCreatedAt),
				PositionRemovedAt: ticketToPB(posRemovedAt),
			})
			misleads = false
			return
		}
		n := &api.RGANode{Element: elementToPB(m)}
		switch {
		case !posMovedAt.IsZero():
			n.PositionMovedAt = ticketToPB(posMovedAt)
			n.PositionCreatedAt = ticketToPB(posCreatedAt)
		case misleads:
			n.PositionMovedAt = ticketToPB(m.CreatedAt())
			n.PositionCreatedAt = ticketToPB(m.CreatedAt())
		}
		nodes = append(nodes, n)
		misleads = !posMovedAt.IsZero() && written[m.CreatedAt()]
	})
	return nodes
}
