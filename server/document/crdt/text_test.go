package crdt

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// textOp is an edit or style as a replica made it, ready to run on any replica.
type textOp struct {
	style    bool
	from, to TextPos
	content  string
	attrs    []TextAttr
	remove   []string
	at       Ticket
	vv       VersionVector
}

// replica is one copy of a document holding a text, editing it the way an SDK client does:
// by character index, with a version vector on every change.
type replica struct {
	root    *Root
	text    *Text
	actor   ActorID
	lamport int64
	vv      VersionVector
	log     []textOp
}

var textCreatedAt = Ticket{Lamport: 1, Delimiter: 1, Actor: ActorID{0xaa}}

func newReplica(t testing.TB, id byte) *replica {
	t.Helper()
	obj := NewObject(InitialTicket)
	text := NewText(textCreatedAt)
	obj.Set("t", text, textCreatedAt)
	r := &replica{root: NewRoot(obj), text: text, actor: ActorID{id}, lamport: 1, vv: VersionVector{textCreatedAt.Actor: 1}}
	return r
}

// indexToPos resolves a character index to the node it falls in, the left one at a boundary.
func (r *replica) indexToPos(idx int) TextPos {
	if idx == 0 {
		return TextPos{ID: r.text.rga.head.id}
	}
	for n := r.text.rga.head.next; n != nil; n = n.next {
		if n.IsRemoved() {
			continue
		}
		l := int(n.contentLen())
		if idx <= l {
			return TextPos{ID: n.id, RelativeOffset: int64(idx)}
		}
		idx -= l
	}
	panic("index out of range")
}

func (r *replica) tick() Ticket {
	r.lamport++
	r.vv[r.actor] = r.lamport
	return Ticket{Lamport: r.lamport, Delimiter: 1, Actor: r.actor}
}

func (r *replica) apply(t testing.TB, op textOp) {
	t.Helper()
	var pairs []GCPair
	var diff DataSize
	var err error
	if op.style {
		pairs, diff, err = r.text.Style(op.from, op.to, op.attrs, op.remove, op.at, op.vv)
	} else {
		pairs, diff, err = r.text.Edit(op.from, op.to, op.content, op.attrs, op.at, op.vv)
	}
	if err != nil {
		t.Fatalf("apply %+v: %v", op, err)
	}
	r.root.AddLiveSize(diff)
	for _, p := range pairs {
		r.root.RegisterGCPair(p)
	}
	if op.at.Lamport > r.lamport {
		r.lamport = op.at.Lamport
	}
	for a, l := range op.vv {
		if l > r.vv[a] {
			r.vv[a] = l
		}
	}
}

func (r *replica) edit(t testing.TB, from, to int, content string, attrs ...TextAttr) textOp {
	t.Helper()
	op := textOp{from: r.indexToPos(from), to: r.indexToPos(to), content: content, attrs: attrs}
	op.at = r.tick()
	op.vv = r.vv.Copy()
	r.apply(t, op)
	r.log = append(r.log, op)
	return op
}

func (r *replica) style(t testing.TB, from, to int, attrs []TextAttr, remove ...string) textOp {
	t.Helper()
	op := textOp{style: true, from: r.indexToPos(from), to: r.indexToPos(to), attrs: attrs, remove: remove}
	op.at = r.tick()
	op.vv = r.vv.Copy()
	r.apply(t, op)
	r.log = append(r.log, op)
	return op
}

func (r *replica) json() string { return string(r.text.JSON(nil)) }

// checkIndex fails unless the text's lookup index and linked list agree: every node
// resolves to itself, the links run both ways, and the counts match.
func checkIndex(t testing.TB, text *Text) {
	t.Helper()
	n := 0
	for node := text.rga.head.next; node != nil; node = node.next {
		n++
		if got := text.rga.floor(node.id); got != node {
			t.Fatalf("index: %s resolves to %v", node.id.Key(), got)
		}
		if node.next != nil && node.next.prev != node {
			t.Fatalf("broken prev link at %s", node.id.Key())
		}
	}
	if n != text.rga.count {
		t.Fatalf("count %d, walked %d", text.rga.count, n)
	}
	pieces := 0
	for _, ps := range text.byIDLen() {
		pieces += ps
	}
	if pieces != n+1 {
		t.Fatalf("index holds %d pieces for %d nodes and the head", pieces, n)
	}
}

func (t *Text) byIDLen() []int {
	var out []int
	for _, ps := range t.rga.byID {
		out = append(out, len(ps))
	}
	return out
}

func TestTextTypingSplitsAndJSON(t *testing.T) {
	r := newReplica(t, 1)
	for i, c := range "hello" {
		r.edit(t, i, i, string(c))
	}
	r.edit(t, 5, 5, " world")
	r.edit(t, 8, 8, "-") // splits " world" into " wo" and "rld"
	if got, want := r.json(), `[{"val":"h"},{"val":"e"},{"val":"l"},{"val":"l"},{"val":"o"},{"val":" wo"},{"val":"-"},{"val":"rld"}]`; got != want {
		t.Fatalf("json\n got %s\nwant %s", got, want)
	}
	if got := r.text.String(); got != "hello wo-rld" {
		t.Fatalf("string %q", got)
	}
	r.edit(t, 1, 10, "") // removes "ello wo-r" across split pieces
	if got := r.text.String(); got != "hld" {
		t.Fatalf("after delete %q", got)
	}
	// e, l, l, o, " wo", "-" and the "r" split off "rld".
	if got := r.root.GarbageLen(); got != 7 {
		t.Fatalf("garbage %d, want 7 removed nodes", got)
	}
	checkIndex(t, r.text)
}

func TestTextSizeCountsUTF16(t *testing.T) {
	r := newReplica(t, 1)
	before := r.root.Size()
	r.edit(t, 0, 0, "a😀b") // 4 code units
	d := r.root.Size().Live
	d.Sub(before.Live)
	if want := (DataSize{Data: 8, Meta: TicketSize}); d != want {
		t.Fatalf("live size grew by %+v, want %+v", d, want)
	}
	// Split between the surrogate halves, as an index-based SDK edit may.
	r.edit(t, 2, 2, "x")
	if got, want := r.json(), `[{"val":"a�"},{"val":"x"},{"val":"�b"}]`; got != want {
		t.Fatalf("json %s, want %s", got, want)
	}
	if got := r.text.DataSize(); got != (DataSize{Data: 10, Meta: 3*TicketSize + r.text.metaSize()}) {
		t.Fatalf("text size %+v", got)
	}
}

// Two replicas insert at the same place at once: both end with the later ticket first.
func TestTextConcurrentInsertSamePosition(t *testing.T) {
	a, b := newReplica(t, 1), newReplica(t, 2)
	base := a.edit(t, 0, 0, "ac")
	b.apply(t, base)
	opA := a.edit(t, 1, 1, "A")
	opB := b.edit(t, 1, 1, "B")
	a.apply(t, opB)
	b.apply(t, opA)
	if a.json() != b.json() {
		t.Fatalf("diverged:\n%s\n%s", a.json(), b.json())
	}
	// Same lamport: the larger actor wins the place next to the position.
	if got := a.text.String(); got != "aBAc" {
		t.Fatalf("got %q, want aBAc", got)
	}
	checkIndex(t, a.text)
	checkIndex(t, b.text)
}

// A removal does not remove text inserted concurrently inside its range.
func TestTextConcurrentDeleteKeepsUnseenInsert(t *testing.T) {
	a, b := newReplica(t, 1), newReplica(t, 2)
	base := a.edit(t, 0, 0, "abcd")
	b.apply(t, base)
	del := a.edit(t, 1, 3, "")    // removes "bc"
	ins := b.edit(t, 2, 2, "XYZ") // inside "bc"
	a.apply(t, ins)
	b.apply(t, del)
	if a.json() != b.json() {
		t.Fatalf("diverged:\n%s\n%s", a.json(), b.json())
	}
	if got := a.text.String(); got != "aXYZd" {
		t.Fatalf("got %q, want aXYZd", got)
	}
	// The insertion split the tombstone "bc" on a; as in the SDK, the split-off "c" is a
	// tombstone nobody registered for collection, while b removed "b" and "c" separately.
	if a.root.GarbageLen() != 1 || b.root.GarbageLen() != 2 {
		t.Fatalf("garbage %d and %d, want 1 and 2", a.root.GarbageLen(), b.root.GarbageLen())
	}
}

// Concurrent removals of the same text: the later one's ticket stays, on every replica.
func TestTextConcurrentDeletesLastWriterWins(t *testing.T) {
	a, b := newReplica(t, 1), newReplica(t, 2)
	base := a.edit(t, 0, 0, "abc")
	b.apply(t, base)
	delA := a.edit(t, 0, 3, "")
	delB := b.edit(t, 1, 2, "")
	a.apply(t, delB)
	b.apply(t, delA)
	if a.json() != b.json() || a.text.String() != "" {
		t.Fatalf("got %q / %q", a.text.String(), b.text.String())
	}
	removedAt := func(r *replica) []string {
		var out []string
		r.text.Nodes(func(n *TextNode) { out = append(out, n.id.Key()+"@"+n.removedAt.Key()) })
		return out
	}
	if fmt.Sprint(removedAt(a)) != fmt.Sprint(removedAt(b)) {
		t.Fatalf("tombstones differ:\n%v\n%v", removedAt(a), removedAt(b))
	}
}

func TestTextStyleSetAndRemove(t *testing.T) {
	r := newReplica(t, 1)
	r.edit(t, 0, 0, "abcdef")
	r.style(t, 1, 4, []TextAttr{{"bold", "true"}, {"color", `"red"`}})
	if got, want := r.json(), `[{"val":"a"},{"attrs":{"bold":true,"color":"red"},"val":"bcd"},{"val":"ef"}]`; got != want {
		t.Fatalf("json\n got %s\nwant %s", got, want)
	}
	r.style(t, 2, 3, nil, "bold")
	if got, want := r.json(), `[{"val":"a"},{"attrs":{"bold":true,"color":"red"},"val":"b"},{"attrs":{"color":"red"},"val":"c"},{"attrs":{"bold":true,"color":"red"},"val":"d"},{"val":"ef"}]`; got != want {
		t.Fatalf("json\n got %s\nwant %s", got, want)
	}
	// The removed attribute waits for collection.
	if got := r.root.GarbageLen(); got != 1 {
		t.Fatalf("garbage %d, want 1", got)
	}
	vv := r.vv.Copy()
	if n := r.root.GarbageCollect(vv); n != 1 {
		t.Fatalf("collected %d", n)
	}
	if _, ok := r.text.rga.floor(TextNodeID{CreatedAt: r.log[0].at, Offset: 2}).value.attrs.Get("bold"); ok {
		t.Fatal("removed attribute still held after collection")
	}
}

// One style removing a key from several nodes gives them all the same GC key, so their
// registrations cancel pairwise, as in the SDK.
func TestTextRemoveStyleAcrossNodesToggles(t *testing.T) {
	r := newReplica(t, 1)
	r.edit(t, 0, 0, "a")
	r.edit(t, 1, 1, "b")
	r.edit(t, 2, 2, "c")
	r.style(t, 0, 3, []TextAttr{{"i", "true"}})
	r.style(t, 0, 3, nil, "i")
	if got := r.root.GarbageLen(); got != 1 {
		t.Fatalf("garbage %d, want 1 (three registrations of one key)", got)
	}
	if got, want := r.json(), `[{"val":"a"},{"val":"b"},{"val":"c"}]`; got != want {
		t.Fatalf("json %s", got)
	}
}

// A style does not touch text inserted concurrently (unseen by its change).
func TestTextConcurrentStyleSkipsUnseen(t *testing.T) {
	a, b := newReplica(t, 1), newReplica(t, 2)
	base := a.edit(t, 0, 0, "abc")
	b.apply(t, base)
	st := a.style(t, 0, 3, []TextAttr{{"b", "1"}})
	ins := b.edit(t, 1, 1, "X")
	a.apply(t, ins)
	b.apply(t, st)
	if a.json() != b.json() {
		t.Fatalf("diverged:\n%s\n%s", a.json(), b.json())
	}
	if got, want := a.json(), `[{"attrs":{"b":1},"val":"a"},{"val":"X"},{"attrs":{"b":1},"val":"bc"}]`; got != want {
		t.Fatalf("json\n got %s\nwant %s", got, want)
	}
}

func TestTextGarbageCollectRelinksSplitPieces(t *testing.T) {
	r := newReplica(t, 1)
	ins := r.edit(t, 0, 0, "abcde")
	r.edit(t, 2, 3, "") // pieces "ab" "c"(removed) "de"
	if n := r.root.GarbageCollect(r.vv.Copy()); n != 1 {
		t.Fatalf("collected %d", n)
	}
	checkIndex(t, r.text)
	de := r.text.rga.floor(TextNodeID{CreatedAt: ins.at, Offset: 3})
	if de.insPrev == nil || de.insPrev.id.Offset != 0 {
		t.Fatalf("insPrev of \"de\" after purge: %+v", de.insPrev)
	}
	// A position at the start of "de" now resolves to "ab", whose end is before it: the
	// SDK refuses it, and so do we.
	_, _, err := r.text.Edit(TextPos{ID: TextNodeID{CreatedAt: ins.at, Offset: 3}}, TextPos{ID: TextNodeID{CreatedAt: ins.at, Offset: 3}}, "x", nil, r.tick(), nil)
	if !errors.Is(err, ErrTextOffset) {
		t.Fatalf("err %v, want ErrTextOffset", err)
	}
	r.edit(t, 2, 2, "C")
	if got := r.text.String(); got != "abCde" {
		t.Fatalf("got %q", got)
	}
	if got := r.root.Size().GC; got != (DataSize{}) {
		t.Fatalf("gc size after collection %+v", got)
	}
}

func TestTextEditRefusesBadPositions(t *testing.T) {
	r := newReplica(t, 1)
	op := r.edit(t, 0, 0, "abc")
	unknown := TextPos{ID: TextNodeID{CreatedAt: Ticket{Lamport: 99, Actor: ActorID{9}}}}
	past := TextPos{ID: op.from.ID, RelativeOffset: 1} // head has no content
	inside := TextPos{ID: TextNodeID{CreatedAt: op.at}, RelativeOffset: 4}
	negative := TextPos{ID: TextNodeID{CreatedAt: op.at}, RelativeOffset: -1}
	for _, c := range []struct {
		name     string
		from, to TextPos
		want     error
	}{
		{"unknown from", unknown, op.from, ErrTextNodeNotFound},
		{"unknown to", op.from, unknown, ErrTextNodeNotFound},
		{"past head", past, past, ErrTextOffset},
		{"past node", inside, inside, ErrTextOffset},
		{"before node", negative, negative, ErrTextNodeNotFound},
	} {
		before := r.json()
		_, _, err := r.text.Edit(c.from, c.to, "x", nil, r.tick(), nil)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		_, _, err = r.text.Style(c.from, c.to, []TextAttr{{"a", "1"}}, nil, r.tick(), nil)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: style err %v, want %v", c.name, err, c.want)
		}
		if r.json() != before {
			t.Errorf("%s: refused edit changed the text", c.name)
		}
	}
	// A second insertion with the same ticket would give two nodes one ID.
	_, _, err := r.text.Edit(op.from, op.from, "dup", nil, op.at, nil)
	if !errors.Is(err, ErrTextDuplicateNode) {
		t.Errorf("duplicate: err %v", err)
	}
}

func TestTextAttributeJSONAsTheSDK(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{`"x\"y"`, `"k":"x\"y"`},
		{`1`, `"k":1`},
		{`1.50`, `"k":1.5`},
		{`1e21`, `"k":1e+21`},
		{`123456789012345678901`, `"k":123456789012345680000`},
		{`0.0000001`, `"k":1e-7`},
		{`-0`, `"k":0`},
		{`1e400`, `"k":Infinity`},
		{`true`, `"k":true`},
		{`null`, `"k":null`},
		{`[1,[2,null],"a"]`, `"k":1,2,,a`},
		{`{"a":1}`, `"k":[object Object]`},
		{`"line\nbreak"`, `"k":"line\nbreak"`},
	} {
		if got := attrJSONItem("k", c.value); got != c.want {
			t.Errorf("%s: got %s, want %s", c.value, got, c.want)
		}
	}
	// Items sort as whole strings: "a!" (0x21) before "a" whose closing quote is 0x22.
	v := &TextValue{content: []uint16{'x'}}
	v.SetAttr("a", "1", Ticket{Lamport: 1})
	v.SetAttr("a!", "2", Ticket{Lamport: 1})
	v.SetAttr("\U0001F600", "3", Ticket{Lamport: 1})
	v.SetAttr("\uff61", "4", Ticket{Lamport: 1})
	if got, want := string(v.appendJSON(nil)), `{"attrs":{"a!":2,"a":1,"😀":3,"｡":4},"val":"x"}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestTextDeepCopyIsIndependent(t *testing.T) {
	r := newReplica(t, 1)
	r.edit(t, 0, 0, "abc")
	r.style(t, 0, 2, []TextAttr{{"b", "1"}})
	c := r.text.DeepCopy().(*Text)
	checkIndex(t, c)
	r.edit(t, 1, 2, "Z")
	r.style(t, 0, 1, []TextAttr{{"b", "2"}})
	if got, want := string(c.JSON(nil)), `[{"attrs":{"b":1},"val":"ab"},{"val":"c"}]`; got != want {
		t.Fatalf("copy changed: %s", got)
	}
}

// Random concurrent editing by three replicas, each change delivered to the others in a
// random causal order, must converge.
func TestTextRandomConcurrentEditsConverge(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewSource(seed))
		reps := []*replica{newReplica(t, 1), newReplica(t, 2), newReplica(t, 3)}
		delivered := make([][]int, len(reps)) // delivered[i][j]: ops of j applied by i
		for i := range delivered {
			delivered[i] = make([]int, len(reps))
		}
		deliverable := func(i, j int) bool {
			d := delivered[i][j]
			if j == i || d >= len(reps[j].log) {
				return false
			}
			op := reps[j].log[d]
			for a, l := range op.vv {
				if a == reps[j].actor || a == textCreatedAt.Actor {
					continue
				}
				if reps[i].vv[a] < l {
					return false
				}
			}
			return true
		}
		for step := 0; step < 60; step++ {
			i := rng.Intn(len(reps))
			r := reps[i]
			if rng.Intn(3) == 0 {
				for j := range reps {
					for deliverable(i, j) {
						r.apply(t, reps[j].log[delivered[i][j]])
						delivered[i][j]++
					}
				}
				continue
			}
			n := len([]rune(r.text.String()))
			from := rng.Intn(n + 1)
			to := from + rng.Intn(n-from+1)
			switch k := rng.Intn(10); {
			case k < 6:
				r.edit(t, from, to, strings.Repeat(string(rune('a'+rng.Intn(26))), 1+rng.Intn(3)))
			case k < 8:
				r.edit(t, from, to, "")
			case k < 9:
				r.style(t, from, to, []TextAttr{{fmt.Sprintf("s%d", rng.Intn(2)), fmt.Sprint(rng.Intn(3))}})
			default:
				r.style(t, from, to, nil, fmt.Sprintf("s%d", rng.Intn(2)))
			}
			delivered[i][i] = len(r.log)
		}
		for progress := true; progress; {
			progress = false
			for i := range reps {
				for j := range reps {
					for deliverable(i, j) {
						reps[i].apply(t, reps[j].log[delivered[i][j]])
						delivered[i][j]++
						progress = true
					}
				}
			}
		}
		for i := 1; i < len(reps); i++ {
			if reps[i].json() != reps[0].json() {
				t.Fatalf("seed %d: replica %d diverged\n%s\n%s", seed, i, reps[0].json(), reps[i].json())
			}
		}
		for _, r := range reps {
			checkIndex(t, r.text)
			r.root.GarbageCollect(r.vv.Copy())
			checkIndex(t, r.text)
		}
	}
}
