package document

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"
	"unicode/utf16"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// RootSetChange builds the change that sets each member of root on the
// document's root object, as upstream's UpdateDocument does (members not in
// root stay): one Set per member, building objects, arrays, texts, trees
// and counters with the operations the SDK would send. The change is made
// by actor with client_seq 1 at a lamport after every change d has applied,
// and its version vector covers d's, so its values win over every value
// d holds.
func (d *Document) RootSetChange(root yson.Object, actor crdt.ActorID) (*api.Change, error) {
	lamport := d.lamport + 1
	for _, l := range d.vv {
		lamport = max(lamport, l+1)
	}
	b := &opBuilder{lamport: lamport, actor: actor}
	if err := b.members(crdt.InitialTicket, root); err != nil {
		return nil, err
	}
	vv := d.vv.Copy()
	vv[actor] = lamport
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq: 1, Lamport: lamport, ActorId: actor[:], VersionVector: VersionVectorToPB(vv),
		},
		Operations: b.ops,
		Message:    "update document root by admin",
	}, nil
}

type opBuilder struct {
	lamport   int64
	actor     crdt.ActorID
	delimiter uint32
	ops       []*api.Operation
}

func (b *opBuilder) next() crdt.Ticket {
	b.delimiter++
	return crdt.Ticket{Lamport: b.lamport, Delimiter: b.delimiter, Actor: b.actor}
}

func (b *opBuilder) members(parent crdt.Ticket, obj yson.Object) error {
	for _, m := range obj {
		at := b.next()
		simple, fill, err := b.simple(m.Value, at)
		if err != nil {
			return fmt.Errorf("%q: %w", m.Key, err)
		}
		b.ops = append(b.ops, &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: ticketToPB(parent), Key: m.Key, Value: simple, ExecutedAt: ticketToPB(at),
		}}})
		if err := fill(); err != nil {
			return fmt.Errorf("%q: %w", m.Key, err)
		}
	}
	return nil
}

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// simple returns the element a Set or Add creates for v, created at at, and
// what fills it once it exists (the members, elements, text or nothing).
func (b *opBuilder) simple(v any, at crdt.Ticket) (*api.JSONElementSimple, func() error, error) {
	none := func() error { return nil }
	s := &api.JSONElementSimple{CreatedAt: ticketToPB(at)}
	switch v := v.(type) {
	case nil:
		s.Type = api.ValueType_VALUE_TYPE_NULL
	case bool:
		s.Type = api.ValueType_VALUE_TYPE_BOOLEAN
		s.Value = []byte{0}
		if v {
			s.Value[0] = 1
		}
	case float64:
		s.Type, s.Value = api.ValueType_VALUE_TYPE_DOUBLE, binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
	case string:
		s.Type, s.Value = api.ValueType_VALUE_TYPE_STRING, []byte(v)
	case yson.Int:
		s.Type, s.Value = api.ValueType_VALUE_TYPE_INTEGER, le32(int32(v))
	case yson.Long:
		s.Type, s.Value = api.ValueType_VALUE_TYPE_LONG, le64(int64(v))
	case []byte:
		s.Type, s.Value = api.ValueType_VALUE_TYPE_BYTES, v
	case time.Time:
		ms := v.UnixMilli()
		if ms < 0 {
			return nil, nil, fmt.Errorf("%w: a date before 1970", ErrInvalidOperation)
		}
		s.Type, s.Value = api.ValueType_VALUE_TYPE_DATE, le64(ms)
	case yson.Counter:
		if v.Long {
			s.Type, s.Value = api.ValueType_VALUE_TYPE_LONG_CNT, le64(v.Value)
		} else {
			s.Type, s.Value = api.ValueType_VALUE_TYPE_INTEGER_CNT, le32(int32(v.Value))
		}
	case yson.Object:
		// An empty object, then a Set of each member in it.
		value, err := proto.Marshal(&api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{CreatedAt: ticketToPB(at)}}})
		if err != nil {
			return nil, nil, err
		}
		s.Type, s.Value = api.ValueType_VALUE_TYPE_JSON_OBJECT, value
		return s, func() error { return b.members(at, v) }, nil
	case yson.Array:
		// An empty array, then an Add of each element to its end.
		value, err := proto.Marshal(&api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: &api.JSONElement_JSONArray{CreatedAt: ticketToPB(at)}}})
		if err != nil {
			return nil, nil, err
		}
		s.Type, s.Value = api.ValueType_VALUE_TYPE_JSON_ARRAY, value
		return s, func() error { return b.elements(at, v) }, nil
	case yson.Text:
		s.Type = api.ValueType_VALUE_TYPE_TEXT
		return s, func() error { b.text(at, v); return nil }, nil
	case yson.Tree:
		s.Type = api.ValueType_VALUE_TYPE_TREE
		value, err := b.tree(at, v)
		if err != nil {
			return nil, nil, err
		}
		s.Value = value
	default:
		return nil, nil, fmt.Errorf("%w: unsupported value %T", ErrInvalidOperation, v)
	}
	return s, none, nil
}

func (b *opBuilder) elements(parent crdt.Ticket, arr yson.Array) error {
	prev := crdt.InitialTicket
	for i, e := range arr {
		at := b.next()
		simple, fill, err := b.simple(e, at)
		if err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		b.ops = append(b.ops, &api.Operation{Body: &api.Operation_Add_{Add: &api.Operation_Add{
			ParentCreatedAt: ticketToPB(parent), PrevCreatedAt: ticketToPB(prev), Value: simple, ExecutedAt: ticketToPB(at),
		}}})
		if err := fill(); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
		prev = at
	}
	return nil
}

// text types the text's runs one after the other, each with its attributes.
func (b *opBuilder) text(parent crdt.Ticket, t yson.Text) {
	pos := &api.TextNodePos{CreatedAt: ticketToPB(crdt.InitialTicket)}
	for _, n := range t {
		if n.Value == "" {
			continue
		}
		at := b.next()
		b.ops = append(b.ops, &api.Operation{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
			ParentCreatedAt: ticketToPB(parent), From: pos, To: pos, Content: n.Value, Attributes: n.Attrs, ExecutedAt: ticketToPB(at),
		}}})
		pos = &api.TextNodePos{CreatedAt: ticketToPB(at), RelativeOffset: int32(len(utf16.Encode([]rune(n.Value))))}
	}
}

// tree encodes the tree's nodes as a TREE value: the nodes in postorder
// with their depths, each created at a ticket of its own.
func (b *opBuilder) tree(at crdt.Ticket, t yson.Tree) ([]byte, error) {
	var nodes []*api.TreeNode
	var walk func(n yson.TreeNode, depth int32) error
	walk = func(n yson.TreeNode, depth int32) error {
		if n.Type == crdt.TreeTextType && n.Value == "" {
			return fmt.Errorf("%w: an empty tree text node", ErrInvalidOperation)
		}
		for _, c := range n.Children {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		id := b.next()
		pb := &api.TreeNode{Id: &api.TreeNodeID{CreatedAt: ticketToPB(id)}, Type: n.Type, Value: n.Value, Depth: depth}
		if len(n.Attrs) > 0 {
			keys := make([]string, 0, len(n.Attrs))
			for k := range n.Attrs {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			pb.Attributes = make(map[string]*api.NodeAttr, len(keys))
			for _, k := range keys {
				pb.Attributes[k] = &api.NodeAttr{Value: n.Attrs[k], UpdatedAt: ticketToPB(id)}
			}
		}
		nodes = append(nodes, pb)
		return nil
	}
	if err := walk(t.Root, 0); err != nil {
		return nil, err
	}
	return proto.Marshal(&api.JSONElement{Body: &api.JSONElement_Tree_{Tree: &api.JSONElement_Tree{
		Nodes: nodes, CreatedAt: ticketToPB(at),
	}}})
}
