package crdt

import (
	"fmt"
	"strings"
	"unicode/utf16"
)

// TextValue is a text node's content, in UTF-16 code units because every offset of the
// protocol counts them (and a split may fall between the halves of a surrogate pair), and its
// attributes.
type TextValue struct {
	content []uint16
	attrs   *RHT // nil until the first attribute
}

func newTextValue(content []uint16) *TextValue { return &TextValue{content: content} }

// Content is the value as a string; a lone surrogate becomes U+FFFD, as when the SDK encodes
// it to UTF-8.
func (v *TextValue) Content() string {
	ascii := true
	for _, u := range v.content {
		if u >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii {
		return string(utf16.Decode(v.content))
	}
	var sb strings.Builder
	sb.Grow(len(v.content))
	for _, u := range v.content {
		sb.WriteByte(byte(u))
	}
	return sb.String()
}

// Attrs returns the attributes (nil when the node never had one).
func (v *TextValue) Attrs() *RHT { return v.attrs }

func (v *TextValue) rht() *RHT {
	if v.attrs == nil {
		v.attrs = &RHT{}
	}
	return v.attrs
}

// SetAttr sets an attribute as a snapshot or an insertion carries it.
func (v *TextValue) SetAttr(key, value string, t Ticket) (prevRemoved, written *RHTNode) {
	return v.rht().Set(key, value, t)
}

// split returns the two halves as new values, each with its own copy of the attributes; the
// old value (and GC pairs that name it as parent) keeps its attribute nodes, as in the SDK.
func (v *TextValue) split(offset int) (*TextValue, *TextValue) {
	left := &TextValue{content: v.content[:offset:offset]}
	right := &TextValue{content: v.content[offset:]}
	if v.attrs != nil {
		left.attrs = v.attrs.DeepCopy()
		right.attrs = v.attrs.DeepCopy()
	}
	return left, right
}

// DataSize counts the content at two bytes per code unit and every attribute node, removed
// ones included.
func (v *TextValue) DataSize() DataSize {
	s := DataSize{Data: 2 * len(v.content)}
	if v.attrs != nil {
		for _, n := range v.attrs.nodes {
			s.Add(n.DataSize())
		}
	}
	return s
}

// PurgeNode drops a collected attribute.
func (v *TextValue) PurgeNode(child GCChild) {
	if n, ok := child.(*RHTNode); ok && v.attrs != nil {
		v.attrs.Purge(n)
	}
}

// TextAttr is an attribute of an edit or a style: key and JSON-encoded value.
type TextAttr struct {
	Key   string
	Value string
}

// Text is a rich text element: an RGA of split nodes with attributes.
type Text struct {
	base
	rga *rgaTreeSplit
}

// NewText returns an empty text created at createdAt.
func NewText(createdAt Ticket) *Text {
	return &Text{base: base{createdAt: createdAt}, rga: newRGATreeSplit()}
}

// Len is the number of nodes (pieces) in the text, tombstones included.
func (t *Text) Len() int { return t.rga.count }

// Nodes calls fn for each node in document order, tombstones included (the head excluded).
func (t *Text) Nodes(fn func(n *TextNode)) {
	for n := t.rga.head.next; n != nil; n = n.next {
		fn(n)
	}
}

// AppendNode adds a node read from a snapshot at the end of the text. insPrev, when given,
// names the piece it was split from. Node IDs must be unique.
func (t *Text) AppendNode(id TextNodeID, content string, removedAt Ticket, insPrev *TextNodeID) (*TextNode, error) {
	if t.rga.has(id) {
		return nil, ErrTextDuplicateNode
	}
	n := &TextNode{id: id, value: newTextValue(utf16.Encode([]rune(content))), removedAt: removedAt}
	t.rga.insertAfter(t.rga.tail, n)
	if insPrev != nil {
		if p := t.rga.floor(*insPrev); p != nil {
			n.setInsPrev(p)
		}
	}
	return n, nil
}

// Edit replaces the range from..to with content carrying attrs, at editedAt. vv is the
// version vector of the change (empty for a change that has none). It returns the removed
// nodes to register for collection and the live size it added. Every check happens before
// anything changes.
func (t *Text) Edit(from, to TextPos, content string, attrs []TextAttr, editedAt Ticket, vv VersionVector) ([]GCPair, DataSize, error) {
	var diff DataSize
	r, err := t.rga.resolveRange(from, to)
	if err != nil {
		return nil, diff, err
	}
	// Replicas applying the edit then map both positions' own node IDs to offsets (for
	// undo history) and fail when no node holds them.
	if err := t.checkNodeOf(from, r.from); err != nil {
		return nil, diff, err
	}
	if err := t.checkNodeOf(to, r.to); err != nil {
		return nil, diff, err
	}
	var units []uint16
	if content != "" {
		if t.rga.has(TextNodeID{CreatedAt: editedAt}) {
			return nil, diff, fmt.Errorf("%w: %s", ErrTextDuplicateNode, editedAt.Key())
		}
		units = utf16.Encode([]rune(content))
	}

	fromLeft, fromRight, toRight, diff := t.rga.splitRange(r, editedAt)
	removed := t.rga.deleteNodes(fromRight, toRight, editedAt, vv)

	if len(units) > 0 {
		v := newTextValue(units)
		for _, a := range attrs {
			v.SetAttr(a.Key, a.Value, editedAt)
		}
		n := &TextNode{id: TextNodeID{CreatedAt: editedAt}, value: v}
		t.rga.insertAfter(fromLeft, n)
		diff.Add(n.DataSize())
	}

	var pairs []GCPair
	if len(removed) > 0 {
		pairs = make([]GCPair, len(removed))
		for i, n := range removed {
			pairs[i] = GCPair{Parent: t, Child: n}
		}
	}
	return pairs, diff, nil
}

// checkNodeOf checks that some node holds p's own ID, given the node p resolved to.
func (t *Text) checkNodeOf(p TextPos, resolved *TextNode) error {
	if resolved.id.CreatedAt == p.ID.CreatedAt && resolved.id.Offset <= p.ID.Offset {
		return nil
	}
	if t.rga.floor(p.ID) == nil {
		return fmt.Errorf("%w: %s", ErrTextNodeNotFound, p.ID.Key())
	}
	return nil
}

// styleTargets splits at both ends and returns the live nodes between them that the change
// had seen created. Without a version vector every node counts as seen; with one, a node
// counts as seen when the vector's lamport for its actor reaches its creation.
func (t *Text) styleTargets(from, to TextPos, editedAt Ticket, vv VersionVector) ([]*TextNode, DataSize, error) {
	r, err := t.rga.resolveRange(from, to)
	if err != nil {
		return nil, DataSize{}, err
	}
	_, fromRight, toRight, diff := t.rga.splitRange(r, editedAt)
	var nodes []*TextNode
	for n := fromRight; n != nil && n != toRight; n = n.next {
		if n.IsRemoved() {
			continue
		}
		if len(vv) > 0 && n.id.CreatedAt.Lamport > vv[n.id.CreatedAt.Actor] {
			continue
		}
		nodes = append(nodes, n)
	}
	return nodes, diff, nil
}

// Style removes the attributes named in remove, then sets attrs, on the nodes in from..to, at
// editedAt. vv is the change's version vector; an empty one (a change without a vector)
// counts every node as seen, as the SDK does for a change whose vector is absent. (The SDK
// would style nothing for a vector present but empty, which no client sends.) It returns the attribute nodes to
// register for collection and the live size it added, with the SDK's accounting.
func (t *Text) Style(from, to TextPos, attrs []TextAttr, remove []string, editedAt Ticket, vv VersionVector) ([]GCPair, DataSize, error) {
	var diff DataSize
	if _, err := t.rga.resolveRange(from, to); err != nil {
		return nil, diff, err
	}
	// Each pass resolves and splits the range afresh, the removal's and the
	// setting's alike, so both see the nodes as the SDK does.
	eachTarget := func(apply func(v *TextValue)) error {
		nodes, d, err := t.styleTargets(from, to, editedAt, vv)
		if err != nil {
			return err
		}
		diff.Add(d)
		for _, n := range nodes {
			apply(n.value)
		}
		return nil
	}
	var pairs []GCPair
	if len(remove) > 0 {
		if err := eachTarget(func(v *TextValue) {
			for _, key := range remove {
				for _, gc := range v.rht().Remove(key, editedAt) {
					pairs = append(pairs, GCPair{Parent: v, Child: gc})
					diff.Add(gc.DataSize())
				}
			}
		}); err != nil {
			return nil, diff, err
		}
	}
	if len(attrs) > 0 {
		if err := eachTarget(func(v *TextValue) {
			for _, a := range attrs {
				prev, _ := v.SetAttr(a.Key, a.Value, editedAt)
				if prev != nil {
					pairs = append(pairs, GCPair{Parent: v, Child: prev})
				}
				// The SDK adds the key's current node, written or not.
				if cur, ok := v.attrs.Get(a.Key); ok {
					diff.Add(cur.DataSize())
				}
			}
		}); err != nil {
			return nil, diff, err
		}
	}
	return pairs, diff, nil
}

// PurgeNode drops a collected node.
func (t *Text) PurgeNode(child GCChild) {
	if n, ok := child.(*TextNode); ok {
		t.rga.purge(n)
	}
}

// GCPairs lists the removed nodes and removed attributes, for a root built from a snapshot.
func (t *Text) GCPairs() []GCPair {
	var pairs []GCPair
	for n := t.rga.head.next; n != nil; n = n.next {
		if n.IsRemoved() {
			pairs = append(pairs, GCPair{Parent: t, Child: n})
		}
		if a := n.value.attrs; a != nil {
			for _, an := range a.nodes {
				if an.removed {
					pairs = append(pairs, GCPair{Parent: n.value, Child: an})
				}
			}
		}
	}
	return pairs
}

// DataSize counts the live nodes and the element's tickets.
func (t *Text) DataSize() DataSize {
	var s DataSize
	for n := t.rga.head.next; n != nil; n = n.next {
		if !n.IsRemoved() {
			s.Add(n.DataSize())
		}
	}
	s.Meta += t.metaSize()
	return s
}

// String is the live content.
func (t *Text) String() string {
	var units []uint16
	for n := t.rga.head.next; n != nil; n = n.next {
		if !n.IsRemoved() {
			units = append(units, n.value.content...)
		}
	}
	return string(utf16.Decode(units))
}

// JSON writes the live nodes as the SDK's toSortedJSON: [{"attrs":{...},"val":"..."},...].
func (t *Text) JSON(b []byte) []byte {
	b = append(b, '[')
	first := true
	for n := t.rga.head.next; n != nil; n = n.next {
		if n.IsRemoved() {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = n.value.appendJSON(b)
	}
	return append(b, ']')
}

// DeepCopy copies the text with values and attributes of its own.
func (t *Text) DeepCopy() Element {
	c := NewText(t.createdAt)
	c.movedAt, c.removedAt = t.movedAt, t.removedAt
	copies := make(map[*TextNode]*TextNode, t.rga.count)
	prev := c.rga.head
	for n := t.rga.head.next; n != nil; n = n.next {
		v := &TextValue{content: n.value.content[:len(n.value.content):len(n.value.content)]}
		if n.value.attrs != nil {
			v.attrs = n.value.attrs.DeepCopy()
		}
		cn := &TextNode{id: n.id, value: v, removedAt: n.removedAt}
		c.rga.insertAfter(prev, cn)
		copies[n] = cn
		if n.insPrev != nil {
			if p, ok := copies[n.insPrev]; ok {
				cn.setInsPrev(p)
			} else if p := c.rga.floor(n.insPrev.id); p != nil {
				cn.setInsPrev(p)
			}
		}
		prev = cn
	}
	return c
}

var (
	_ Element  = (*Text)(nil)
	_ GCParent = (*Text)(nil)
	_ GCParent = (*TextValue)(nil)
	_ GCChild  = (*TextNode)(nil)
	_ GCChild  = (*RHTNode)(nil)
)
