package document

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// A revision keeps a document's content, not its history: the root element
// as it is encoded in snapshots (what a restore builds its change from) and
// the same content in upstream Yorkie's YSON form (what clients read).

// Revision returns the document's root encoded as a binary api.JSONElement,
// and its live content in YSON.
func (d *Document) Revision() (content []byte, yson string, err error) {
	root := elementToPB(d.root.Object())
	opts := proto.MarshalOptions{Deterministic: true}
	if content, err = opts.Marshal(root); err != nil {
		return nil, "", fmt.Errorf("encode revision: %w", err)
	}
	var b strings.Builder
	if err := writeYSON(&b, root); err != nil {
		return nil, "", fmt.Errorf("revision YSON: %w", err)
	}
	return content, b.String(), nil
}

// readContent decodes a revision's content, which must hold an object.
func readContent(content []byte) (*api.JSONElement_JSONObject, error) {
	var root api.JSONElement
	if err := proto.Unmarshal(content, &root); err != nil {
		return nil, fmt.Errorf("%w: revision content: %w", ErrInvalidOperation, err)
	}
	obj := root.GetJsonObject()
	if obj == nil {
		return nil, fmt.Errorf("%w: revision content is not an object", ErrInvalidOperation)
	}
	return obj, nil
}

// RestoreChange builds the change that brings the document's root back to a
// revision's content, as upstream's restore does: it removes every member of
// the root, then sets each member of the content anew. It is the change of
// the all-zero initial actor (the server's), one lamport past the document's
// clock, with the document's version vector: every replica that applies it
// after the changes the server holds ends with the revision's content, and
// a concurrent edit merges with it as with any other change. The change is
// not applied: the caller applies and stores it.
func (d *Document) RestoreChange(content []byte) (*api.Change, error) {
	obj, err := readContent(content)
	if err != nil {
		return nil, err
	}
	lamport := d.lamport + 1
	r := &restorer{lamport: lamport}
	rootAt := ticketToPB(crdt.InitialTicket)
	var ops []*api.Operation
	if root, ok := d.root.Object().(*crdt.Object); ok {
		root.Members(func(_ string, m crdt.Element) {
			if m.IsRemoved() {
				return
			}
			ops = append(ops, &api.Operation{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
				ParentCreatedAt: rootAt,
				CreatedAt:       ticketToPB(m.CreatedAt()),
				ExecutedAt:      r.next(),
			}}})
		})
	}
	for _, n := range obj.GetNodes() {
		if n.GetElement() == nil || ticketRemoved(n.GetElement()) {
			continue
		}
		set, err := r.set(rootAt, n.GetKey(), n.GetElement())
		if err != nil {
			return nil, fmt.Errorf("restore %q: %w", n.GetKey(), err)
		}
		ops = append(ops, set...)
	}
	vv := d.vv.Copy()
	vv[crdt.InitialActorID] = lamport
	actor := crdt.InitialActorID
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq:     1,
			Lamport:       lamport,
			ActorId:       actor[:],
			VersionVector: VersionVectorToPB(vv),
		},
		Message:    "restore revision",
		Operations: ops,
	}, nil
}

// restorer issues the tickets of a restore change and copies content with
// them, leaving out what was removed.
type restorer struct {
	lamport int64
	delim   uint32
}

func (r *restorer) next() *api.TimeTicket {
	r.delim++
	return ticketToPB(crdt.Ticket{Lamport: r.lamport, Delimiter: r.delim, Actor: crdt.InitialActorID})
}

// set returns the operations that put a copy of e under key of the parent:
// a Set, and for a text the edits that fill it (a Set carries a text empty,
// as the SDK sends it).
func (r *restorer) set(parent *api.TimeTicket, key string, e *api.JSONElement) ([]*api.Operation, error) {
	setOp := func(v *api.JSONElementSimple) *api.Operation {
		return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
			ParentCreatedAt: parent, Key: key, Value: v, ExecutedAt: v.CreatedAt,
		}}}
	}
	switch b := e.GetBody().(type) {
	case *api.JSONElement_Text_:
		at := r.next()
		ops := []*api.Operation{setOp(&api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_TEXT, CreatedAt: at})}
		pos := &api.TextNodePos{CreatedAt: ticketToPB(crdt.InitialTicket)}
		for _, n := range b.Text.GetNodes() {
			if n.GetRemovedAt() != nil || n.GetValue() == "" {
				continue
			}
			edited := r.next()
			var attrs map[string]string
			for k, a := range n.GetAttributes() {
				if !a.GetIsRemoved() {
					if attrs == nil {
						attrs = make(map[string]string)
					}
					attrs[k] = a.GetValue()
				}
			}
			ops = append(ops, &api.Operation{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
				ParentCreatedAt: at, From: pos, To: pos, Content: n.GetValue(), ExecutedAt: edited, Attributes: attrs,
			}}})
			pos = &api.TextNodePos{CreatedAt: edited, RelativeOffset: int32(utf16Length(n.GetValue()))}
		}
		return ops, nil
	case *api.JSONElement_Tree_:
		tree, err := r.tree(b.Tree)
		if err != nil {
			return nil, err
		}
		value, err := proto.Marshal(&api.JSONElement{Body: &api.JSONElement_Tree_{Tree: tree}})
		if err != nil {
			return nil, fmt.Errorf("encode tree: %w", err)
		}
		return []*api.Operation{setOp(&api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_TREE, CreatedAt: tree.CreatedAt, Value: value})}, nil
	case *api.JSONElement_Primitive_:
		return []*api.Operation{setOp(&api.JSONElementSimple{Type: b.Primitive.GetType(), CreatedAt: r.next(), Value: b.Primitive.GetValue()})}, nil
	case *api.JSONElement_Counter_:
		return []*api.Operation{setOp(&api.JSONElementSimple{Type: b.Counter.GetType(), CreatedAt: r.next(), Value: b.Counter.GetValue()})}, nil
	case *api.JSONElement_JsonObject, *api.JSONElement_JsonArray:
		fresh, err := r.copy(e)
		if err != nil {
			return nil, err
		}
		value, err := proto.Marshal(fresh)
		if err != nil {
			return nil, fmt.Errorf("encode value: %w", err)
		}
		typ, at := api.ValueType_VALUE_TYPE_JSON_OBJECT, fresh.GetJsonObject().GetCreatedAt()
		if a := fresh.GetJsonArray(); a != nil {
			typ, at = api.ValueType_VALUE_TYPE_JSON_ARRAY, a.GetCreatedAt()
		}
		return []*api.Operation{setOp(&api.JSONElementSimple{Type: typ, CreatedAt: at, Value: value})}, nil
	}
	return nil, fmt.Errorf("%w: element without a known body", ErrInvalidOperation)
}

// copy returns e and everything under it that is not removed, with fresh
// tickets: a nested value travels whole in its Set.
func (r *restorer) copy(e *api.JSONElement) (*api.JSONElement, error) {
	switch b := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		out := &api.JSONElement_JSONObject{CreatedAt: r.next()}
		for _, n := range b.JsonObject.GetNodes() {
			if n.GetElement() == nil || ticketRemoved(n.GetElement()) {
				continue
			}
			c, err := r.copy(n.GetElement())
			if err != nil {
				return nil, err
			}
			out.Nodes = append(out.Nodes, &api.RHTNode{Key: n.GetKey(), Element: c})
		}
		return &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: out}}, nil
	case *api.JSONElement_JsonArray:
		out := &api.JSONElement_JSONArray{CreatedAt: r.next()}
		for _, n := range b.JsonArray.GetNodes() {
			if n.GetElement() == nil || ticketRemoved(n.GetElement()) {
				continue // a dead position, or a removed element
			}
			c, err := r.copy(n.GetElement())
			if err != nil {
				return nil, err
			}
			out.Nodes = append(out.Nodes, &api.RGANode{Element: c})
		}
		return &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: out}}, nil
	case *api.JSONElement_Primitive_:
		return &api.JSONElement{Body: &api.JSONElement_Primitive_{Primitive: &api.JSONElement_Primitive{
			Type: b.Primitive.GetType(), Value: b.Primitive.GetValue(), CreatedAt: r.next(),
		}}}, nil
	case *api.JSONElement_Counter_:
		return &api.JSONElement{Body: &api.JSONElement_Counter_{Counter: &api.JSONElement_Counter{
			Type: b.Counter.GetType(), Value: b.Counter.GetValue(), CreatedAt: r.next(), HllRegisters: b.Counter.GetHllRegisters(),
		}}}, nil
	case *api.JSONElement_Text_:
		out := &api.JSONElement_Text{CreatedAt: r.next()}
		for _, n := range b.Text.GetNodes() {
			if n.GetRemovedAt() != nil || n.GetValue() == "" {
				continue
			}
			out.Nodes = append(out.Nodes, &api.TextNode{
				Id:         &api.TextNodeID{CreatedAt: r.next()},
				Value:      n.GetValue(),
				Attributes: r.attrs(n.GetAttributes()),
			})
		}
		return &api.JSONElement{Body: &api.JSONElement_Text_{Text: out}}, nil
	case *api.JSONElement_Tree_:
		tree, err := r.tree(b.Tree)
		if err != nil {
			return nil, err
		}
		return &api.JSONElement{Body: &api.JSONElement_Tree_{Tree: tree}}, nil
	}
	return nil, fmt.Errorf("%w: element without a known body", ErrInvalidOperation)
}

// attrs copies the live attributes of a node with fresh tickets, in key
// order so the tickets do not depend on the map's.
func (r *restorer) attrs(in map[string]*api.NodeAttr) map[string]*api.NodeAttr {
	var out map[string]*api.NodeAttr
	for _, k := range sortedKeys(in) {
		if a := in[k]; !a.GetIsRemoved() {
			if out == nil {
				out = make(map[string]*api.NodeAttr)
			}
			out[k] = &api.NodeAttr{Value: a.GetValue(), UpdatedAt: r.next()}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// treeNode is a node of an encoded tree with its children, rebuilt from
// the encoding's postorder and depths.
type treeNode struct {
	pb       *api.TreeNode
	children []*treeNode
}

// readTree rebuilds the node hierarchy of an encoded tree (postorder, each
// node after its children, with depths), leaving out removed nodes and
// everything under them.
func readTree(pb *api.JSONElement_Tree) (*treeNode, error) {
	var stack []*treeNode
	for _, n := range pb.GetNodes() {
		node := &treeNode{pb: n}
		i := len(stack)
		for i > 0 && stack[i-1].pb.GetDepth() == n.GetDepth()+1 {
			i--
		}
		for _, c := range stack[i:] {
			if c.pb.GetRemovedAt() == nil {
				node.children = append(node.children, c)
			}
		}
		stack = append(stack[:i], node)
	}
	if len(stack) != 1 || stack[0].pb.GetDepth() != 0 {
		return nil, fmt.Errorf("%w: tree nodes do not make one tree", ErrInvalidOperation)
	}
	return stack[0], nil
}

// tree copies a tree's live nodes with fresh IDs.
func (r *restorer) tree(pb *api.JSONElement_Tree) (*api.JSONElement_Tree, error) {
	root, err := readTree(pb)
	if err != nil {
		return nil, err
	}
	out := &api.JSONElement_Tree{CreatedAt: r.next()}
	var walk func(n *treeNode, depth int32)
	walk = func(n *treeNode, depth int32) {
		id := &api.TreeNodeID{CreatedAt: r.next()}
		for _, c := range n.children {
			walk(c, depth+1)
		}
		out.Nodes = append(out.Nodes, &api.TreeNode{
			Id: id, Type: n.pb.GetType(), Value: n.pb.GetValue(), Depth: depth, Attributes: r.attrs(n.pb.GetAttributes()),
		})
	}
	walk(root, 0)
	return out, nil
}

func utf16Length(s string) int {
	n := 0
	for _, c := range s {
		n += utf16.RuneLen(c)
	}
	return n
}

// writeYSON writes an encoded element's live content in upstream Yorkie's
// YSON: JSON for objects, arrays, strings, booleans, doubles and null, and
// typed forms for the rest (Int(1), Long(1), Date("..."), BinData("..."),
// Counter(Int(1)), Text([...]), Tree({...})). Object keys are sorted.
func writeYSON(b *strings.Builder, e *api.JSONElement) error {
	switch body := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		live := make(map[string]*api.JSONElement)
		for _, n := range body.JsonObject.GetNodes() {
			if n.GetElement() != nil && !ticketRemoved(n.GetElement()) {
				live[n.GetKey()] = n.GetElement()
			}
		}
		b.WriteByte('{')
		for i, k := range sortedKeys(live) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(ysonQuote(k))
			b.WriteByte(':')
			if err := writeYSON(b, live[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case *api.JSONElement_JsonArray:
		b.WriteByte('[')
		first := true
		for _, n := range body.JsonArray.GetNodes() {
			if n.GetElement() == nil || ticketRemoved(n.GetElement()) {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			if err := writeYSON(b, n.GetElement()); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *api.JSONElement_Primitive_:
		return writePrimitiveYSON(b, body.Primitive.GetType(), body.Primitive.GetValue())
	case *api.JSONElement_Counter_:
		return writeCounterYSON(b, body.Counter)
	case *api.JSONElement_Text_:
		b.WriteString("Text([")
		first := true
		for _, n := range body.Text.GetNodes() {
			if n.GetRemovedAt() != nil {
				continue
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			b.WriteString(`{"val":`)
			b.WriteString(ysonQuote(n.GetValue()))
			writeAttrsYSON(b, n.GetAttributes())
			b.WriteByte('}')
		}
		b.WriteString("])")
	case *api.JSONElement_Tree_:
		root, err := readTree(body.Tree)
		if err != nil {
			return err
		}
		b.WriteString("Tree(")
		writeTreeYSON(b, root)
		b.WriteByte(')')
	default:
		return fmt.Errorf("%w: element without a known body", ErrInvalidOperation)
	}
	return nil
}

func writeAttrsYSON(b *strings.Builder, attrs map[string]*api.NodeAttr) {
	first := true
	for _, k := range sortedKeys(attrs) {
		if attrs[k].GetIsRemoved() {
			continue
		}
		if first {
			b.WriteString(`,"attrs":{`)
		} else {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(ysonQuote(k))
		b.WriteByte(':')
		b.WriteString(ysonQuote(attrs[k].GetValue()))
	}
	if !first {
		b.WriteByte('}')
	}
}

func writeTreeYSON(b *strings.Builder, n *treeNode) {
	b.WriteString(`{"type":`)
	b.WriteString(ysonQuote(n.pb.GetType()))
	if n.pb.GetType() == "text" {
		b.WriteString(`,"value":`)
		b.WriteString(ysonQuote(n.pb.GetValue()))
		b.WriteByte('}')
		return
	}
	writeAttrsYSON(b, n.pb.GetAttributes())
	b.WriteString(`,"children":[`)
	for i, c := range n.children {
		if i > 0 {
			b.WriteByte(',')
		}
		writeTreeYSON(b, c)
	}
	b.WriteString("]}")
}

func writePrimitiveYSON(b *strings.Builder, t api.ValueType, value []byte) error {
	p, err := crdt.NewPrimitive(crdt.PrimitiveType(t), value, crdt.InitialTicket)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOperation, err)
	}
	switch p.Type() {
	case crdt.PrimitiveNull:
		b.WriteString("null")
	case crdt.PrimitiveBoolean:
		b.WriteString(strconv.FormatBool(len(value) > 0 && value[0] != 0))
	case crdt.PrimitiveInteger:
		if t == api.ValueType_VALUE_TYPE_DOUBLE {
			// An integral double reads as an integer in the SDK, but
			// upstream writes the number it holds.
			b.WriteString(formatDouble(p.Number()))
			break
		}
		fmt.Fprintf(b, "Int(%d)", int32(p.Number()))
	case crdt.PrimitiveDouble:
		b.WriteString(formatDouble(p.Number()))
	case crdt.PrimitiveLong:
		fmt.Fprintf(b, "Long(%d)", p.Long())
	case crdt.PrimitiveString:
		b.WriteString(ysonQuote(p.StringValue()))
	case crdt.PrimitiveBytes:
		fmt.Fprintf(b, "BinData(%q)", base64.StdEncoding.EncodeToString(value))
	case crdt.PrimitiveDate:
		ms := int64(binary.LittleEndian.Uint64(value))
		fmt.Fprintf(b, "Date(%q)", time.UnixMilli(ms).UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// formatDouble writes a double as Go's %v does, as upstream's server does.
func formatDouble(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return ysonQuote(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return fmt.Sprintf("%v", f)
}

func writeCounterYSON(b *strings.Builder, c *api.JSONElement_Counter) error {
	kind, ok := counterTypes[c.GetType()]
	if !ok {
		return fmt.Errorf("%w: counter of type %d", ErrInvalidOperation, c.GetType())
	}
	counter, err := crdt.NewCounter(kind, c.GetValue(), crdt.InitialTicket)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOperation, err)
	}
	switch kind {
	case crdt.CounterLong:
		fmt.Fprintf(b, "Counter(Long(%s))", counterJSON(counter))
	case crdt.CounterIntDedup:
		fmt.Fprintf(b, "DedupCounter(Int(%s),%q)", counterJSON(counter), base64.StdEncoding.EncodeToString(c.GetHllRegisters()))
	default:
		fmt.Fprintf(b, "Counter(Int(%s))", counterJSON(counter))
	}
	return nil
}

func counterJSON(c *crdt.Counter) string { return string(c.JSON(nil)) }

// ysonQuote writes s as a quoted JSON string the way upstream's YSON does
// (its crdt.EscapeString): quote, backslash and the named control characters
// escaped, other control characters as \u00XX, everything else as it is, so
// JSON readers (the SDK's YSON parser among them) read it back.
func ysonQuote(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '"':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	return string(append(b, '"'))
}
