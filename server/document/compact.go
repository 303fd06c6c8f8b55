package document

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// ErrCompactionMismatch reports a compacted change that does not rebuild the
// document's content: the document is left as it was.
var ErrCompactionMismatch = errors.New("compacted change does not rebuild the content")

// compactLamport is the lamport of the compacted change and of every ticket it
// issues: the change is the first of a new history, made by the initial actor
// (as upstream's compaction builds a new document), and its tickets are told
// apart by their delimiters.
const compactLamport = 1

// CompactChange returns one change, by the initial actor, that builds the
// document's content from an empty document: every live element of d with
// fresh tickets, no tombstones, no presences. Applied to an empty document it
// gives the same JSON as d, which it checks; ErrCompactionMismatch otherwise.
// d is not changed.
func CompactChange(d *Document) (*api.Change, error) {
	data, err := d.Snapshot()
	if err != nil {
		return nil, err
	}
	live, err := FromSnapshotAt(data, d.VersionVector())
	if err != nil {
		return nil, fmt.Errorf("copy document: %w", err)
	}
	// Every change the document holds is known to its own vector: every
	// tombstone goes.
	live.GarbageCollect(d.VersionVector())

	root := elementToPB(live.root.Object()).GetJsonObject()
	remap := newTicketMap()
	remap.collect(root.ProtoReflect())
	remap.assign()
	remap.rewrite(root.ProtoReflect())

	rootAt := ticketToPB(crdt.InitialTicket)
	var ops []*api.Operation
	for _, n := range root.GetNodes() {
		e := n.GetElement()
		if ticketRemoved(e) {
			continue
		}
		op, text, err := setMember(rootAt, n.GetKey(), e)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
		if text != nil {
			ops = append(ops, remap.textEdits(text)...)
		}
	}
	vv := crdt.VersionVector{crdt.InitialActorID: compactLamport}
	c := &api.Change{
		Id: &api.ChangeID{
			ClientSeq:     1,
			Lamport:       compactLamport,
			ActorId:       bytes.Clone(crdt.InitialActorID[:]),
			VersionVector: VersionVectorToPB(vv),
		},
		Operations: ops,
	}
	check := New()
	if err := check.ApplyChanges([]*api.Change{c}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompactionMismatch, err)
	}
	if got, want := check.JSON(), d.JSON(); got != want {
		return nil, fmt.Errorf("%w: %d bytes of JSON against %d", ErrCompactionMismatch, len(got), len(want))
	}
	return c, nil
}

// ticketRemoved reports whether an encoded element carries a removal ticket.
func ticketRemoved(e *api.JSONElement) bool {
	switch b := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		return b.JsonObject.GetRemovedAt() != nil
	case *api.JSONElement_JsonArray:
		return b.JsonArray.GetRemovedAt() != nil
	case *api.JSONElement_Primitive_:
		return b.Primitive.GetRemovedAt() != nil
	case *api.JSONElement_Counter_:
		return b.Counter.GetRemovedAt() != nil
	case *api.JSONElement_Text_:
		return b.Text.GetRemovedAt() != nil
	case *api.JSONElement_Tree_:
		return b.Tree.GetRemovedAt() != nil
	}
	return false
}

// setMember returns the Set operation that puts the encoded element under key
// of the root. A text is set empty: its content follows as edits, so it is
// returned too.
func setMember(rootAt *api.TimeTicket, key string, e *api.JSONElement) (*api.Operation, *api.JSONElement_Text, error) {
	simple := &api.JSONElementSimple{}
	var text *api.JSONElement_Text
	switch b := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		simple.Type, simple.CreatedAt = api.ValueType_VALUE_TYPE_JSON_OBJECT, b.JsonObject.GetCreatedAt()
	case *api.JSONElement_JsonArray:
		simple.Type, simple.CreatedAt = api.ValueType_VALUE_TYPE_JSON_ARRAY, b.JsonArray.GetCreatedAt()
	case *api.JSONElement_Tree_:
		simple.Type, simple.CreatedAt = api.ValueType_VALUE_TYPE_TREE, b.Tree.GetCreatedAt()
	case *api.JSONElement_Primitive_:
		simple.Type, simple.CreatedAt, simple.Value = b.Primitive.GetType(), b.Primitive.GetCreatedAt(), b.Primitive.GetValue()
	case *api.JSONElement_Counter_:
		simple.Type, simple.CreatedAt, simple.Value = b.Counter.GetType(), b.Counter.GetCreatedAt(), b.Counter.GetValue()
	case *api.JSONElement_Text_:
		simple.Type, simple.CreatedAt = api.ValueType_VALUE_TYPE_TEXT, b.Text.GetCreatedAt()
		text = b.Text
	default:
		return nil, nil, fmt.Errorf("%w: member %q has no known body", ErrInvalidOperation, key)
	}
	switch simple.Type {
	case api.ValueType_VALUE_TYPE_JSON_OBJECT, api.ValueType_VALUE_TYPE_JSON_ARRAY, api.ValueType_VALUE_TYPE_TREE:
		// Containers and trees travel whole, as their encoded element.
		v, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			return nil, nil, fmt.Errorf("encode member %q: %w", key, err)
		}
		simple.Value = v
	}
	return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: rootAt,
		Key:             key,
		Value:           simple,
		ExecutedAt:      simple.CreatedAt,
	}}}, text, nil
}

// textEdits returns the edits that append the text's live pieces one by one,
// each with its attributes, so the rebuilt text has the same pieces (the
// SDK's JSON of a text lists them). Each edit's piece is named by the edit's
// ticket, a fresh one.
func (m *ticketMap) textEdits(t *api.JSONElement_Text) []*api.Operation {
	var ops []*api.Operation
	prev := &api.TextNodePos{CreatedAt: ticketToPB(crdt.InitialTicket)}
	for _, n := range t.GetNodes() {
		if n.GetRemovedAt() != nil || n.GetValue() == "" {
			continue
		}
		at := m.fresh()
		var attrs map[string]string
		if len(n.GetAttributes()) > 0 {
			attrs = make(map[string]string, len(n.GetAttributes()))
			for k, a := range n.GetAttributes() {
				attrs[k] = a.GetValue()
			}
		}
		ops = append(ops, &api.Operation{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
			ParentCreatedAt: t.GetCreatedAt(),
			From:            prev,
			To:              prev,
			Content:         n.GetValue(),
			ExecutedAt:      at,
			Attributes:      attrs,
		}}})
		prev = &api.TextNodePos{CreatedAt: at, RelativeOffset: int32(len(utf16.Encode([]rune(n.GetValue()))))}
	}
	return ops
}

// ticketMap gives every ticket of an encoded element tree a fresh one of the
// initial actor, keeping their order, so that the rebuilt elements compare as
// the old ones did. The initial ticket (the root's) stays.
type ticketMap struct {
	seen  map[crdt.Ticket]struct{}
	to    map[crdt.Ticket]uint32
	next  uint32
	actor []byte
}

func newTicketMap() *ticketMap {
	return &ticketMap{seen: map[crdt.Ticket]struct{}{}, actor: bytes.Clone(crdt.InitialActorID[:])}
}

var ticketName = (&api.TimeTicket{}).ProtoReflect().Descriptor().FullName()

// walk calls fn for every TimeTicket under msg.
func walk(msg protoreflect.Message, fn func(*api.TimeTicket)) {
	if msg.Descriptor().FullName() == ticketName {
		if t, ok := msg.Interface().(*api.TimeTicket); ok {
			fn(t)
		}
		return
	}
	msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message(), fn)
					return true
				})
			}
		case fd.IsList():
			if fd.Kind() == protoreflect.MessageKind {
				l := v.List()
				for i := 0; i < l.Len(); i++ {
					walk(l.Get(i).Message(), fn)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			walk(v.Message(), fn)
		}
		return true
	})
}

func ticketOf(t *api.TimeTicket) crdt.Ticket {
	var a crdt.ActorID
	copy(a[:], t.GetActorId())
	return crdt.Ticket{Lamport: t.GetLamport(), Delimiter: t.GetDelimiter(), Actor: a}
}

func (m *ticketMap) collect(msg protoreflect.Message) {
	walk(msg, func(t *api.TimeTicket) { m.seen[ticketOf(t)] = struct{}{} })
}

// assign numbers the collected tickets in their order.
func (m *ticketMap) assign() {
	old := make([]crdt.Ticket, 0, len(m.seen))
	for t := range m.seen {
		if !t.IsZero() {
			old = append(old, t)
		}
	}
	slices.SortFunc(old, func(a, b crdt.Ticket) int {
		if c := cmp.Compare(a.Lamport, b.Lamport); c != 0 {
			return c
		}
		if c := a.Actor.Compare(b.Actor); c != 0 {
			return c
		}
		return cmp.Compare(a.Delimiter, b.Delimiter)
	})
	m.to = make(map[crdt.Ticket]uint32, len(old))
	for i, t := range old {
		m.to[t] = uint32(i + 1)
	}
	m.next = uint32(len(old))
	m.seen = nil
}

func (m *ticketMap) rewrite(msg protoreflect.Message) {
	walk(msg, func(t *api.TimeTicket) {
		old := ticketOf(t)
		if old.IsZero() {
			return
		}
		t.Lamport, t.Delimiter, t.ActorId = compactLamport, m.to[old], m.actor
	})
}

// fresh issues a ticket after every mapped one.
func (m *ticketMap) fresh() *api.TimeTicket {
	m.next++
	return &api.TimeTicket{Lamport: compactLamport, Delimiter: m.next, ActorId: m.actor}
}
