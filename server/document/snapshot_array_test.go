package document

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// movedArrayDoc is baseDoc with l = [8, 7, 9]: 8 added after 7, 7 moved behind 8 (its
// first position is left dead, not collected), then 9 added after 7's new position.
func movedArrayDoc(t *testing.T) *Document {
	t.Helper()
	d := baseDoc(t)
	l := tk(1, 2, actorA)
	err := d.ApplyChanges([]*api.Change{
		change(actorA, 2, 2, addOpPB(l, tk(1, 3, actorA), intValue(tk(2, 1, actorA), 8), tk(2, 1, actorA))),
		change(actorA, 3, 3, moveOpPB(l, tk(2, 1, actorA), tk(1, 3, actorA), tk(3, 1, actorA))),
		change(actorA, 4, 4, addOpPB(l, tk(3, 1, actorA), intValue(tk(4, 1, actorA), 9), tk(4, 1, actorA))),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.JSON(), `{"c":1,"d":0,"l":[8,7,9],"o":{},"s":"str"}`; got != want {
		t.Fatalf("JSON %s, want %s", got, want)
	}
	return d
}

func arrayNodes(t *testing.T, snap []byte, key string) []*api.RGANode {
	t.Helper()
	var s api.Snapshot
	if err := proto.Unmarshal(snap, &s); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.GetRoot().GetJsonObject().GetNodes() {
		if n.GetKey() == key {
			return n.GetElement().GetJsonArray().GetNodes()
		}
	}
	t.Fatalf("no array %q in the snapshot", key)
	return nil
}

// TestSnapshotKeepsElementAfterMovedOne checks that a snapshot of an array whose moved
// element still has its first position reads back in the document's order, and that our
// reading of it encodes to the same bytes.
func TestSnapshotKeepsElementAfterMovedOne(t *testing.T) {
	d := movedArrayDoc(t)
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	nodes := arrayNodes(t, snap, "l")
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4 (dead, 8, 7 moved, 9)", len(nodes))
	}
	nine := nodes[3]
	if !proto.Equal(nine.GetPositionCreatedAt(), tk(4, 1, actorA)) || !proto.Equal(nine.GetPositionMovedAt(), tk(4, 1, actorA)) {
		t.Fatalf("9 is written without its own position: %v", nine)
	}
	if nodes[1].GetPositionMovedAt() != nil {
		t.Errorf("8 follows a dead position and needs no position tickets: %v", nodes[1])
	}
	back, err := FromSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if back.JSON() != d.JSON() {
		t.Fatalf("read back %s, want %s", back.JSON(), d.JSON())
	}
	again, err := back.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, snap) {
		t.Errorf("a snapshot of the document read back differs from the one it was read from")
	}
	if back.GarbageLen() != d.GarbageLen() {
		t.Errorf("read back garbage %d, want %d", back.GarbageLen(), d.GarbageLen())
	}

	// Both go on alike: an insertion behind 9 and a move of 9 to the front.
	l := tk(1, 2, actorA)
	more := []*api.Change{
		change(actorB, 1, 5, addOpPB(l, tk(4, 1, actorA), intValue(tk(5, 1, actorB), 10), tk(5, 1, actorB))),
		change(actorA, 5, 6, moveOpPB(l, rootTicket(), tk(4, 1, actorA), tk(6, 1, actorA))),
	}
	for _, doc := range []*Document{d, back} {
		if err := doc.ApplyChanges(more); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := back.JSON(), `{"c":1,"d":0,"l":[9,8,7,10],"o":{},"s":"str"}`; got != want || d.JSON() != want {
		t.Errorf("after more changes: read back %s, live %s, want %s", got, d.JSON(), want)
	}
}

// TestSnapshotReaderPlacesPlainElementAsSDK checks that the reader places an element written
// without position tickets as the SDK's reader does: behind the position a move emptied, when
// the element before it is that moved one. It is why the writer gives such an element its
// own position tickets.
func TestSnapshotReaderPlacesPlainElementAsSDK(t *testing.T) {
	snap, err := movedArrayDoc(t).Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s api.Snapshot
	if err := proto.Unmarshal(snap, &s); err != nil {
		t.Fatal(err)
	}
	for _, n := range s.GetRoot().GetJsonObject().GetNodes() {
		if n.GetKey() == "l" {
			nine := n.GetElement().GetJsonArray().GetNodes()[3]
			nine.PositionCreatedAt, nine.PositionMovedAt = nil, nil
		}
	}
	plain, err := proto.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromSnapshot(plain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.JSON(), `{"c":1,"d":0,"l":[9,8,7],"o":{},"s":"str"}`; got != want {
		t.Errorf("JSON %s, want the SDK's reading %s", got, want)
	}
}
