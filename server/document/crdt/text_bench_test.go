package crdt

import (
	"testing"
)

// typedText builds a text of n characters typed one by one, each a node, and returns the
// text, the node IDs in order and the next lamport.
func typedText(b *testing.B, n int) (*Root, *Text, []TextNodeID, int64) {
	b.Helper()
	obj := NewObject(InitialTicket)
	text := NewText(textCreatedAt)
	obj.Set("t", text, textCreatedAt)
	root := NewRoot(obj)
	actor := ActorID{1}
	ids := make([]TextNodeID, 0, n)
	prev := TextPos{ID: text.rga.head.id}
	lamport := int64(1)
	for i := 0; i < n; i++ {
		lamport++
		at := Ticket{Lamport: lamport, Delimiter: 1, Actor: actor}
		pairs, diff, err := text.Edit(prev, prev, string(rune('a'+i%26)), nil, at, nil)
		if err != nil {
			b.Fatal(err)
		}
		root.AddLiveSize(diff)
		for _, p := range pairs {
			root.RegisterGCPair(p)
		}
		id := TextNodeID{CreatedAt: at}
		ids = append(ids, id)
		prev = TextPos{ID: id, RelativeOffset: 1}
	}
	return root, text, ids, lamport
}

// One typed character in the middle of a 100k-character text built by typing.
func BenchmarkTextEditTypeInto100k(b *testing.B) {
	_, text, ids, lamport := typedText(b, 100_000)
	vv := VersionVector{ActorID{1}: lamport + int64(b.N) + 1}
	pos := TextPos{ID: ids[50_000], RelativeOffset: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lamport++
		at := Ticket{Lamport: lamport, Delimiter: 1, Actor: ActorID{1}}
		if _, _, err := text.Edit(pos, pos, "x", nil, at, vv); err != nil {
			b.Fatal(err)
		}
		pos = TextPos{ID: TextNodeID{CreatedAt: at}, RelativeOffset: 1}
	}
}

// Deleting one character of a 100k-character typed text, registering it for collection.
func BenchmarkTextEditDeleteIn100k(b *testing.B) {
	root, text, ids, lamport := typedText(b, 100_000)
	vv := VersionVector{ActorID{1}: lamport + int64(b.N) + 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lamport++
		at := Ticket{Lamport: lamport, Delimiter: 1, Actor: ActorID{1}}
		k := 1 + i%(len(ids)-1)
		from := TextPos{ID: ids[k-1], RelativeOffset: 1}
		to := TextPos{ID: ids[k], RelativeOffset: 1}
		pairs, diff, err := text.Edit(from, to, "", nil, at, vv)
		if err != nil || len(pairs) != 1 {
			b.Fatal(err, len(pairs))
		}
		root.AddLiveSize(diff)
		for _, p := range pairs {
			root.RegisterGCPair(p)
		}
	}
}

// Typing into the middle of one pasted 100k-character node: every edit splits a piece of the
// same insertion, the worst case for the per-insertion piece index.
func BenchmarkTextEditSplitPasted100k(b *testing.B) {
	obj := NewObject(InitialTicket)
	text := NewText(textCreatedAt)
	obj.Set("t", text, textCreatedAt)
	paste := make([]byte, 100_000)
	for i := range paste {
		paste[i] = 'a' + byte(i%26)
	}
	head := TextPos{ID: text.rga.head.id}
	pasteAt := Ticket{Lamport: 2, Delimiter: 1, Actor: ActorID{1}}
	if _, _, err := text.Edit(head, head, string(paste), nil, pasteAt, nil); err != nil {
		b.Fatal(err)
	}
	lamport := int64(2)
	vv := VersionVector{ActorID{1}: int64(b.N) + 3}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lamport++
		at := Ticket{Lamport: lamport, Delimiter: 1, Actor: ActorID{1}}
		pos := TextPos{ID: TextNodeID{CreatedAt: pasteAt}, RelativeOffset: int64(1 + (i*7919)%99_998)}
		if _, _, err := text.Edit(pos, pos, "x", nil, at, vv); err != nil {
			b.Fatal(err)
		}
	}
}

// Styling a 10-character range of a 100k-character typed text.
func BenchmarkTextStyle10In100k(b *testing.B) {
	root, text, ids, lamport := typedText(b, 100_000)
	vv := VersionVector{ActorID{1}: lamport + int64(b.N) + 1}
	attrs := []TextAttr{{Key: "bold", Value: "true"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lamport++
		at := Ticket{Lamport: lamport, Delimiter: 1, Actor: ActorID{1}}
		j := (i * 10) % (len(ids) - 11)
		from := TextPos{ID: ids[j], RelativeOffset: 1}
		to := TextPos{ID: ids[j+10], RelativeOffset: 1}
		pairs, diff, err := text.Style(from, to, attrs, nil, at, vv)
		if err != nil {
			b.Fatal(err)
		}
		root.AddLiveSize(diff)
		for _, p := range pairs {
			root.RegisterGCPair(p)
		}
	}
}

// Writing a 100k-character typed text as JSON.
func BenchmarkTextJSON100k(b *testing.B) {
	_, text, _, _ := typedText(b, 100_000)
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = text.JSON(buf[:0])
	}
}
