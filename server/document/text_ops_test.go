package document

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

func textValue(createdAt *api.TimeTicket) *api.JSONElementSimple {
	return &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_TEXT, CreatedAt: createdAt}
}

func textPos(createdAt *api.TimeTicket, offset, rel int32) *api.TextNodePos {
	return &api.TextNodePos{CreatedAt: createdAt, Offset: offset, RelativeOffset: rel}
}

func editOpPB(parent *api.TimeTicket, from, to *api.TextNodePos, content string, attrs map[string]string, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
		ParentCreatedAt: parent, From: from, To: to, Content: content, Attributes: attrs, ExecutedAt: executedAt,
	}}}
}

func styleOpPB(parent *api.TimeTicket, from, to *api.TextNodePos, attrs map[string]string, remove []string, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Style_{Style: &api.Operation_Style{
		ParentCreatedAt: parent, From: from, To: to, Attributes: attrs, AttributesToRemove: remove, ExecutedAt: executedAt,
	}}}
}

// textDoc is a document whose root holds a text "t" with "abc" typed into it by actor A at
// lamports 2..4 (nodes 2, 3, 4), and an integer "n".
func textDoc(t testing.TB) (*Document, *api.TimeTicket) {
	t.Helper()
	d := New()
	text := tk(1, 1, actorA)
	changes := []*api.Change{change(actorA, 1, 1,
		setOpPB(rootTicket(), "t", textValue(text), text),
		setOpPB(rootTicket(), "n", intValue(tk(1, 2, actorA), 7), tk(1, 2, actorA)),
	)}
	prev := textPos(rootTicket(), 0, 0)
	for i, c := range "abc" {
		l := int64(2 + i)
		changes = append(changes, change(actorA, uint32(2+i), l, editOpPB(text, prev, prev, string(c), nil, tk(l, 1, actorA))))
		prev = textPos(tk(l, 1, actorA), 0, 1)
	}
	if err := d.ApplyChanges(changes); err != nil {
		t.Fatal(err)
	}
	return d, text
}

func TestTextEditStyleAndSnapshot(t *testing.T) {
	d, text := textDoc(t)
	// Replace "b" by "XY" in bold, then italicise "aX".
	err := d.ApplyChanges([]*api.Change{
		change(actorA, 5, 5, editOpPB(text, textPos(tk(2, 1, actorA), 0, 1), textPos(tk(3, 1, actorA), 0, 1), "XY", map[string]string{"bold": "true"}, tk(5, 1, actorA))),
		change(actorA, 6, 6, styleOpPB(text, textPos(rootTicket(), 0, 0), textPos(tk(5, 1, actorA), 0, 1), map[string]string{"i": `"yes"`}, nil, tk(6, 1, actorA))),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":7,"t":[{"attrs":{"i":"yes"},"val":"a"},{"attrs":{"bold":true,"i":"yes"},"val":"X"},{"attrs":{"bold":true},"val":"Y"},{"val":"c"}]}`
	if got := d.JSON(); got != want {
		t.Fatalf("JSON\n got %s\nwant %s", got, want)
	}
	if got := d.GarbageLen(); got != 1 {
		t.Fatalf("garbage %d, want the removed \"b\"", got)
	}
	loaded := reloaded(t, d)
	// (The size of a loaded document follows the SDK's count on loading, which subtracts
	// removed text nodes twice; TestTextMatchesSDK compares it.)
	if loaded.JSON() != want || loaded.GarbageLen() != 1 {
		t.Fatalf("loaded %s, garbage %d", loaded.JSON(), loaded.GarbageLen())
	}
	if n := loaded.GarbageCollect(crdt.VersionVector{actorA: 6}); n != 1 {
		t.Fatalf("collected %d", n)
	}
}

func TestTextRefusals(t *testing.T) {
	text := tk(1, 1, actorA)
	nodeA := textPos(tk(2, 1, actorA), 0, 1)
	at := tk(9, 1, actorA)
	badActor := &api.TimeTicket{Lamport: 2, Delimiter: 1, ActorId: []byte{1, 2}}
	for _, c := range []struct {
		name string
		op   *api.Operation
		want error
	}{
		{"edit of an unknown element", editOpPB(tk(99, 1, actorA), nodeA, nodeA, "x", nil, at), ErrElementNotFound},
		{"edit of an integer", editOpPB(tk(1, 2, actorA), nodeA, nodeA, "x", nil, at), ErrWrongElementType},
		{"style of an integer", styleOpPB(tk(1, 2, actorA), nodeA, nodeA, map[string]string{"b": "1"}, nil, at), ErrWrongElementType},
		{"edit without a parent", editOpPB(nil, nodeA, nodeA, "x", nil, at), ErrInvalidOperation},
		{"edit without from", editOpPB(text, nil, nodeA, "x", nil, at), ErrInvalidOperation},
		{"edit without to", editOpPB(text, nodeA, nil, "x", nil, at), ErrInvalidOperation},
		{"edit without a ticket", editOpPB(text, nodeA, nodeA, "x", nil, nil), ErrInvalidOperation},
		{"edit at the initial ticket", editOpPB(text, nodeA, nodeA, "x", nil, rootTicket()), ErrInvalidOperation},
		{"position without a ticket", editOpPB(text, textPos(nil, 0, 0), nodeA, "x", nil, at), ErrInvalidOperation},
		{"position with a short actor", editOpPB(text, textPos(badActor, 0, 0), nodeA, "x", nil, at), ErrInvalidOperation},
		{"position naming no node", editOpPB(text, textPos(tk(50, 1, actorB), 0, 0), nodeA, "x", nil, at), ErrElementNotFound},
		{"position before every piece", editOpPB(text, textPos(tk(2, 1, actorA), 0, -1), nodeA, "x", nil, at), ErrElementNotFound},
		{"position past its node", editOpPB(text, textPos(tk(2, 1, actorA), 0, 2), textPos(tk(2, 1, actorA), 0, 2), "x", nil, at), ErrInvalidOperation},
		{"style past its node", styleOpPB(text, nodeA, textPos(tk(4, 1, actorA), 0, 5), map[string]string{"b": "1"}, nil, at), ErrInvalidOperation},
		{"attribute that is not JSON", editOpPB(text, nodeA, nodeA, "x", map[string]string{"b": "bold"}, at), ErrInvalidOperation},
		{"style attribute that is not JSON", styleOpPB(text, nodeA, nodeA, map[string]string{"b": "{"}, nil, at), ErrInvalidOperation},
		{"second insertion with one ticket", editOpPB(text, nodeA, nodeA, "x", nil, tk(3, 1, actorA)), ErrInvalidOperation},
		{"malformed created_at_map_by_actor", &api.Operation{Body: &api.Operation_Edit_{Edit: &api.Operation_Edit{
			ParentCreatedAt: text, From: nodeA, To: nodeA, ExecutedAt: at,
			CreatedAtMapByActor: map[string]*api.TimeTicket{"zz": at},
		}}}, ErrInvalidOperation},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := textDoc(t)
			err := d.ApplyChanges([]*api.Change{change(actorA, 9, 9, c.op)})
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
		})
	}
}

func TestTextSnapshotRefusals(t *testing.T) {
	d, _ := textDoc(t)
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var pb api.Snapshot
	if err := proto.Unmarshal(snap, &pb); err != nil {
		t.Fatal(err)
	}
	textOf := func(s *api.Snapshot) *api.JSONElement_Text {
		for _, n := range s.GetRoot().GetJsonObject().GetNodes() {
			if n.GetKey() == "t" {
				return n.GetElement().GetText()
			}
		}
		t.Fatal("no text in the snapshot")
		return nil
	}
	for _, c := range []struct {
		name   string
		mutate func(*api.JSONElement_Text)
	}{
		{"duplicate node", func(x *api.JSONElement_Text) { x.Nodes = append(x.Nodes, x.Nodes[0]) }},
		{"node without an id", func(x *api.JSONElement_Text) { x.Nodes[1].Id = nil }},
		{"node id without a ticket", func(x *api.JSONElement_Text) { x.Nodes[1].Id = &api.TextNodeID{} }},
		{"attribute without a ticket", func(x *api.JSONElement_Text) {
			x.Nodes[0].Attributes = map[string]*api.NodeAttr{"b": {Value: "1"}}
		}},
		{"text without a ticket", func(x *api.JSONElement_Text) { x.CreatedAt = nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := proto.Clone(&pb).(*api.Snapshot)
			c.mutate(textOf(s))
			b, err := proto.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := FromSnapshot(b); !errors.Is(err, ErrInvalidOperation) {
				t.Fatalf("err %v, want ErrInvalidOperation", err)
			}
		})
	}
}

// FuzzTextOps runs arbitrary edits and styles on a small text: nothing may panic, every
// refusal wraps a sentinel, and what applies must still encode and load.
func FuzzTextOps(f *testing.F) {
	f.Add(int64(2), int32(0), int32(1), int64(4), int32(0), int32(1), "xy", "b", "1", false, int64(9))
	f.Add(int64(0), int32(0), int32(0), int64(3), int32(0), int32(1), "", "i", `"a"`, true, int64(9))
	f.Add(int64(3), int32(0), int32(1), int64(2), int32(0), int32(0), "😀", "", "null", false, int64(3))
	f.Fuzz(func(t *testing.T, fromL int64, fromOff, fromRel int32, toL int64, toOff, toRel int32, content, key, value string, style bool, lamport int64) {
		d, text := textDoc(t)
		ticket := func(l int64) *api.TimeTicket {
			if l == 0 {
				return rootTicket()
			}
			return tk(l, 1, actorA)
		}
		from := textPos(ticket(fromL), fromOff, fromRel)
		to := textPos(ticket(toL), toOff, toRel)
		var op *api.Operation
		if style {
			op = styleOpPB(text, from, to, map[string]string{key: value}, []string{key + "x"}, tk(lamport, 2, actorB))
		} else {
			op = editOpPB(text, from, to, content, map[string]string{key: value}, tk(lamport, 2, actorB))
		}
		err := d.ApplyChanges([]*api.Change{change(actorB, 1, lamport, op)})
		if err != nil {
			if !errors.Is(err, ErrInvalidOperation) && !errors.Is(err, ErrElementNotFound) && !errors.Is(err, ErrWrongElementType) {
				t.Fatalf("refusal without a sentinel: %v", err)
			}
			return
		}
		_ = d.JSON()
		d.GarbageCollect(crdt.VersionVector{actorA: 100, actorB: 100})
		snap, err := d.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := FromSnapshot(snap)
		if err != nil {
			t.Fatalf("our snapshot does not load: %v", err)
		}
		if loaded.JSON() != d.JSON() {
			t.Fatalf("snapshot changed the JSON:\n%s\n%s", d.JSON(), loaded.JSON())
		}
	})
}

// typedTextDoc is a document with a text of n characters typed one by one by actor A.
func typedTextDoc(b *testing.B, n int) (*Document, *api.TimeTicket, *api.TextNodePos, int64) {
	b.Helper()
	d := New()
	text := tk(1, 1, actorA)
	if err := d.ApplyChanges([]*api.Change{change(actorA, 1, 1, setOpPB(rootTicket(), "t", textValue(text), text))}); err != nil {
		b.Fatal(err)
	}
	prev := textPos(rootTicket(), 0, 0)
	lamport := int64(1)
	for i := 0; i < n; i++ {
		lamport++
		c := change(actorA, uint32(lamport), lamport, editOpPB(text, prev, prev, string(rune('a'+i%26)), nil, tk(lamport, 1, actorA)))
		if err := d.ApplyChanges([]*api.Change{c}); err != nil {
			b.Fatal(err)
		}
		prev = textPos(tk(lamport, 1, actorA), 0, 1)
	}
	return d, text, prev, lamport
}

// A pushed one-character change (decoded and applied) in the middle of a 100k-character
// text built by typing.
func BenchmarkApplyTextEdit100k(b *testing.B) {
	d, text, _, lamport := typedTextDoc(b, 100_000)
	pos := textPos(tk(50_000, 1, actorA), 0, 1)
	changes := make([]*api.Change, b.N)
	for i := range changes {
		l := lamport + int64(i) + 1
		changes[i] = change(actorB, uint32(i+1), l, editOpPB(text, pos, pos, "x", nil, tk(l, 1, actorB)))
		changes[i].Id.VersionVector = VersionVectorToPB(crdt.VersionVector{actorA: lamport, actorB: l})
		pos = textPos(tk(l, 1, actorB), 0, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.ApplyChanges(changes[i : i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

// A snapshot of a 100k-character typed text.
func BenchmarkTextSnapshot100k(b *testing.B) {
	d, _, _, _ := typedTextDoc(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}

// A snapshot keeps which piece each split piece came from, so that a position at a split
// boundary resolves on a document read from it as on the document that made the split.
func TestTextSnapshotKeepsSplitLinks(t *testing.T) {
	d := New()
	text := tk(1, 1, actorA)
	ins := tk(2, 1, actorA)
	head := textPos(rootTicket(), 0, 0)
	mid := textPos(ins, 0, 2)
	if err := d.ApplyChanges([]*api.Change{
		change(actorA, 1, 1, setOpPB(rootTicket(), "t", textValue(text), text)),
		change(actorA, 2, 2, editOpPB(text, head, head, "abcd", nil, ins)),
		change(actorA, 3, 3, editOpPB(text, mid, mid, "X", nil, tk(3, 1, actorA))), // "ab" X "cd"
	}); err != nil {
		t.Fatal(err)
	}
	loaded := reloaded(t, d)
	// (ins, 2) with no relative offset names the start of "cd", which belongs to "ab".
	boundary := textPos(ins, 2, 0)
	edit := change(actorB, 1, 4, editOpPB(text, boundary, boundary, "Y", nil, tk(4, 1, actorB)))
	edit.Id.VersionVector = VersionVectorToPB(crdt.VersionVector{actorA: 3, actorB: 4})
	for _, doc := range []*Document{d, loaded} {
		if err := doc.ApplyChanges([]*api.Change{proto.Clone(edit).(*api.Change)}); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"t":[{"val":"ab"},{"val":"Y"},{"val":"X"},{"val":"cd"}]}`
	if d.JSON() != want || loaded.JSON() != want {
		t.Fatalf("got %s and %s, want %s", d.JSON(), loaded.JSON(), want)
	}
}

// FuzzTextSnapshot reads texts of arbitrary shape from snapshots (offsets, tombstones and
// split links in any order) and edits them: nothing may panic.
func FuzzTextSnapshot(f *testing.F) {
	f.Add([]byte{2, 0, 3, 0, 0, 2, 3, 1, 1, 1, 3, 0, 2, 0, 0}, int64(2), int32(1), int32(1), "x", false)
	f.Add([]byte{5, 1, 1, 1, 2, 5, 0, 4, 0, 0}, int64(5), int32(0), int32(3), "", true)
	f.Fuzz(func(t *testing.T, shape []byte, l int64, off, rel int32, content string, style bool) {
		text := tk(1, 1, actorA)
		pt := &api.JSONElement_Text{CreatedAt: text}
		for i := 0; i+4 < len(shape) && len(pt.Nodes) < 32; i += 5 {
			n := &api.TextNode{
				Id:    &api.TextNodeID{CreatedAt: tk(int64(shape[i]%8), 1, actorA), Offset: int32(shape[i+1] % 8)},
				Value: "abcdefgh"[:shape[i+2]%8],
			}
			if shape[i+3]%2 == 1 {
				n.RemovedAt = tk(int64(shape[i+3]%16), 1, actorB)
			}
			if shape[i+4]%3 != 0 {
				n.InsPrevId = &api.TextNodeID{CreatedAt: tk(int64(shape[i+4]%8), 1, actorA), Offset: int32(shape[i+4] % 5)}
			}
			pt.Nodes = append(pt.Nodes, n)
		}
		root := &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
			CreatedAt: rootTicket(),
			Nodes:     []*api.RHTNode{{Key: "t", Element: &api.JSONElement{Body: &api.JSONElement_Text_{Text: pt}}}},
		}}}
		snap, err := proto.Marshal(&api.Snapshot{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		d, err := FromSnapshot(snap)
		if err != nil {
			return
		}
		p := textPos(tk(l%8, 1, actorA), off%8, rel%8)
		var op *api.Operation
		if style {
			op = styleOpPB(text, textPos(rootTicket(), 0, 0), p, map[string]string{"b": "1"}, []string{"i"}, tk(20, 1, actorB))
		} else {
			op = editOpPB(text, p, p, content, nil, tk(20, 1, actorB))
		}
		c := change(actorB, 1, 20, op)
		c.Id.VersionVector = VersionVectorToPB(crdt.VersionVector{actorA: 10, actorB: 20})
		if err := d.ApplyChanges([]*api.Change{c}); err != nil {
			return
		}
		_ = d.JSON()
		d.GarbageCollect(crdt.VersionVector{actorA: 100, actorB: 100})
		if _, err := d.Snapshot(); err != nil {
			t.Fatal(err)
		}
	})
}

// reloaded is d read back from its own snapshot, as a late joiner gets it.
func reloaded(t *testing.T, d *Document) *Document {
	t.Helper()
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := FromSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	return loaded
}
