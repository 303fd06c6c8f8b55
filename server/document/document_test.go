package document

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// base builds a document with an object "o" (1:A:1), an array "l" (1:A:2) holding one
// integer (1:A:3), a counter "c" (1:A:4), a dedup counter "d" (1:A:5) and a string "s"
// (1:A:6).
func baseDoc(t *testing.T) *Document {
	t.Helper()
	d := New()
	err := d.ApplyChanges([]*api.Change{change(actorA, 1, 1,
		setOpPB(rootTicket(), "o", containerValue(tk(1, 1, actorA), false), tk(1, 1, actorA)),
		setOpPB(rootTicket(), "l", containerValue(tk(1, 2, actorA), true), tk(1, 2, actorA)),
		addOpPB(tk(1, 2, actorA), rootTicket(), intValue(tk(1, 3, actorA), 7), tk(1, 3, actorA)),
		setOpPB(rootTicket(), "c", counterValue(tk(1, 4, actorA), api.ValueType_VALUE_TYPE_INTEGER_CNT, []byte{1, 0, 0, 0}), tk(1, 4, actorA)),
		setOpPB(rootTicket(), "d", counterValue(tk(1, 5, actorA), api.ValueType_VALUE_TYPE_INTEGER_DEDUP_CNT, []byte{0, 0, 0, 0}), tk(1, 5, actorA)),
		setOpPB(rootTicket(), "s", stringValue(tk(1, 6, actorA), "str"), tk(1, 6, actorA)),
	)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.JSON(), `{"c":1,"d":0,"l":[7],"o":{},"s":"str"}`; got != want {
		t.Fatalf("base document %s, want %s", got, want)
	}
	return d
}

// TestRefusals checks that every operation that does not apply is refused with the
// sentinel callers test for.
func TestRefusals(t *testing.T) {
	at := tk(2, 1, actorB)
	short := crdt.ActorID{}
	cases := []struct {
		name string
		op   *api.Operation
		want error
	}{
		{"nil operation", nil, ErrInvalidOperation},
		{"empty body", &api.Operation{}, ErrInvalidOperation},
		{"empty set", &api.Operation{Body: &api.Operation_Set_{}}, ErrInvalidOperation},
		{"empty add", &api.Operation{Body: &api.Operation_Add_{}}, ErrInvalidOperation},
		{"empty move", &api.Operation{Body: &api.Operation_Move_{}}, ErrInvalidOperation},
		{"empty remove", &api.Operation{Body: &api.Operation_Remove_{}}, ErrInvalidOperation},
		{"empty increase", &api.Operation{Body: &api.Operation_Increase_{}}, ErrInvalidOperation},
		{"empty array set", &api.Operation{Body: &api.Operation_ArraySet_{}}, ErrInvalidOperation},
		{"empty edit", &api.Operation{Body: &api.Operation_Edit_{}}, ErrInvalidOperation},
		{"empty style", &api.Operation{Body: &api.Operation_Style_{}}, ErrInvalidOperation},
		{"empty tree edit", &api.Operation{Body: &api.Operation_TreeEdit_{}}, ErrInvalidOperation},
		{"empty tree style", &api.Operation{Body: &api.Operation_TreeStyle_{}}, ErrInvalidOperation},
		{"set without parent", setOpPB(nil, "k", intValue(at, 1), at), ErrInvalidOperation},
		{"set without executed at", setOpPB(rootTicket(), "k", intValue(at, 1), nil), ErrInvalidOperation},
		{"set without value", setOpPB(rootTicket(), "k", nil, at), ErrInvalidOperation},
		{"set of a short actor", setOpPB(&api.TimeTicket{Lamport: 1, ActorId: short[:5]}, "k", intValue(at, 1), at), ErrInvalidOperation},
		{"set of an unknown type", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: 99, CreatedAt: at}, at), ErrInvalidOperation},
		{"set of a short double", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_DOUBLE, CreatedAt: at, Value: []byte{1, 2, 3}}, at), ErrInvalidOperation},
		{"set of a short long", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_LONG, CreatedAt: at, Value: []byte{1}}, at), ErrInvalidOperation},
		{"set of a date out of range", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_DATE, CreatedAt: at, Value: []byte{255, 255, 255, 255, 255, 255, 255, 255}}, at), ErrInvalidOperation},
		{"set of an object holding a number", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_JSON_OBJECT, CreatedAt: at}, at), ErrInvalidOperation},
		{"set of an object in bad bytes", setOpPB(rootTicket(), "k", &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_JSON_OBJECT, CreatedAt: at, Value: []byte{0xff}}, at), ErrInvalidOperation},
		{"set of an array holding an object", setOpPB(rootTicket(), "k", func() *api.JSONElementSimple {
			v := containerValue(at, false)
			v.Type = api.ValueType_VALUE_TYPE_JSON_ARRAY
			return v
		}(), at), ErrInvalidOperation},
		{"set of a long counter too short", setOpPB(rootTicket(), "k", counterValue(at, api.ValueType_VALUE_TYPE_LONG_CNT, []byte{1}), at), ErrInvalidOperation},
		{"set under an unknown parent", setOpPB(tk(9, 9, actorB), "k", intValue(at, 1), at), ErrElementNotFound},
		{"set under an array", setOpPB(tk(1, 2, actorA), "k", intValue(at, 1), at), ErrWrongElementType},
		{"set that replaces the root", setOpPB(tk(1, 1, actorA), "k", intValue(rootTicket(), 1), at), ErrRemoveRoot},
		{"set of a value holding the root's ticket", setOpPB(rootTicket(), "k", func() *api.JSONElementSimple {
			inner := &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
				CreatedAt: at,
				Nodes: []*api.RHTNode{{Key: "x", Element: &api.JSONElement{Body: &api.JSONElement_Primitive_{Primitive: &api.JSONElement_Primitive{
					Type: api.ValueType_VALUE_TYPE_NULL, CreatedAt: rootTicket(),
				}}}}},
			}}}
			b, _ := proto.Marshal(inner)
			return &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_JSON_OBJECT, CreatedAt: at, Value: b}
		}(), at), ErrRemoveRoot},
		{"add into an object", addOpPB(tk(1, 1, actorA), rootTicket(), intValue(at, 1), at), ErrWrongElementType},
		{"add after an unknown position", addOpPB(tk(1, 2, actorA), tk(9, 9, actorB), intValue(at, 1), at), ErrElementNotFound},
		{"add under an unknown parent", addOpPB(tk(9, 9, actorB), rootTicket(), intValue(at, 1), at), ErrElementNotFound},
		{"add of the root's ticket", addOpPB(tk(1, 2, actorA), rootTicket(), intValue(rootTicket(), 1), at), ErrRemoveRoot},
		{"move in an object", moveOpPB(tk(1, 1, actorA), rootTicket(), tk(1, 3, actorA), at), ErrWrongElementType},
		{"move of an unknown element", moveOpPB(tk(1, 2, actorA), rootTicket(), tk(9, 9, actorB), at), ErrElementNotFound},
		{"move after an unknown position", moveOpPB(tk(1, 2, actorA), tk(9, 9, actorB), tk(1, 3, actorA), at), ErrElementNotFound},
		{"move without a target", moveOpPB(tk(1, 2, actorA), rootTicket(), nil, at), ErrInvalidOperation},
		{"remove of the root", removeOpPB(rootTicket(), rootTicket(), at), ErrRemoveRoot},
		{"remove of an unknown member", removeOpPB(rootTicket(), tk(9, 9, actorB), at), ErrElementNotFound},
		{"remove of an unknown array element", removeOpPB(tk(1, 2, actorA), tk(9, 9, actorB), at), ErrElementNotFound},
		{"remove under a string", removeOpPB(tk(1, 6, actorA), tk(1, 6, actorA), at), ErrWrongElementType},
		{"remove under an unknown parent", removeOpPB(tk(9, 9, actorB), tk(1, 6, actorA), at), ErrElementNotFound},
		{"increase of an object", increaseOpPB(tk(1, 1, actorA), intValue(at, 1), at, ""), ErrWrongElementType},
		{"increase of an unknown counter", increaseOpPB(tk(9, 9, actorB), intValue(at, 1), at, ""), ErrElementNotFound},
		{"increase by a string", increaseOpPB(tk(1, 4, actorA), stringValue(at, "1"), at, ""), ErrInvalidOperation},
		{"increase by an object", increaseOpPB(tk(1, 4, actorA), containerValue(at, false), at, ""), ErrInvalidOperation},
		{"increase by NaN", increaseOpPB(tk(1, 4, actorA), doubleValue(at, nan()), at, ""), ErrInvalidOperation},
		{"dedup increase without an actor", increaseOpPB(tk(1, 5, actorA), intValue(at, 1), at, ""), ErrInvalidOperation},
		{"dedup increase by two", increaseOpPB(tk(1, 5, actorA), intValue(at, 2), at, "u"), ErrInvalidOperation},
		{"array set in an object", arraySetOpPB(tk(1, 1, actorA), tk(1, 3, actorA), intValue(at, 1), at), ErrWrongElementType},
		{"array set of an unknown element", arraySetOpPB(tk(1, 2, actorA), tk(9, 9, actorB), intValue(at, 1), at), ErrElementNotFound},
		{"array set of the array's head", arraySetOpPB(tk(1, 2, actorA), rootTicket(), intValue(at, 1), at), ErrElementNotFound},
		{"array set of the root's ticket", arraySetOpPB(tk(1, 2, actorA), tk(1, 3, actorA), intValue(rootTicket(), 1), at), ErrRemoveRoot},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := baseDoc(t)
			err := d.ApplyChanges([]*api.Change{change(actorB, 1, 2, c.op)})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
		})
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}

// TestChangeRefusals checks the refusals of a change's own parts.
func TestChangeRefusals(t *testing.T) {
	ok := setOpPB(rootTicket(), "k", intValue(tk(1, 1, actorA), 1), tk(1, 1, actorA))
	cases := []struct {
		name   string
		change *api.Change
	}{
		{"nil change", nil},
		{"no id", &api.Change{Operations: []*api.Operation{ok}}},
		{"short actor", &api.Change{Id: &api.ChangeID{Lamport: 1, ActorId: []byte{1, 2}}}},
		{"bad vector key", &api.Change{Id: &api.ChangeID{Lamport: 1, ActorId: actorA[:], VersionVector: &api.VersionVector{Vector: map[string]int64{"%%": 1}}}}},
		{"vector key of a short actor", &api.Change{Id: &api.ChangeID{Lamport: 1, ActorId: actorA[:], VersionVector: &api.VersionVector{Vector: map[string]int64{"AQI=": 1}}}}},
		{"presence delete", withPresence(change(actorA, 1, 1), &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_DELETE})},
		{"presence unspecified", withPresence(change(actorA, 1, 1), &api.PresenceChange{})},
		{"presence put without presence", withPresence(change(actorA, 1, 1), &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_PUT})},
		{"presence value not JSON", withPresence(change(actorA, 1, 1), &api.PresenceChange{
			Type: api.PresenceChange_CHANGE_TYPE_PUT, Presence: &api.Presence{Data: map[string]string{"name": "{bad"}},
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := New().ApplyChanges([]*api.Change{c.change})
			if !errors.Is(err, ErrInvalidOperation) {
				t.Fatalf("error %v, want %v", err, ErrInvalidOperation)
			}
		})
	}
}

func withPresence(c *api.Change, p *api.PresenceChange) *api.Change {
	c.PresenceChange = p
	return c
}

// TestPresences checks that a put replaces a client's whole presence, a clear drops it,
// snapshots carry them, and presence-only changes (empty vector) leave the clocks alone.
func TestPresences(t *testing.T) {
	d := New()
	put := func(actor crdt.ActorID, data map[string]string) *api.Change {
		return &api.Change{
			Id:             &api.ChangeID{ClientSeq: 1, ActorId: actor[:], VersionVector: &api.VersionVector{}},
			PresenceChange: &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_PUT, Presence: &api.Presence{Data: data}},
		}
	}
	err := d.ApplyChanges([]*api.Change{
		put(actorA, map[string]string{"name": `"a"`, "cursor": `{"x":1}`}),
		put(actorB, map[string]string{"name": `"b"`}),
		put(actorA, map[string]string{"name": `"a2"`}),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Presences()
	if len(got) != 2 || len(got[actorA]) != 1 || got[actorA]["name"] != `"a2"` || got[actorB]["name"] != `"b"` {
		t.Fatalf("presences %v", got)
	}
	if vv := d.VersionVector(); len(vv) != 0 {
		t.Errorf("presence-only changes moved the vector to %v", vv)
	}
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var pb api.Snapshot
	if err := proto.Unmarshal(snap, &pb); err != nil {
		t.Fatal(err)
	}
	if p := pb.GetPresences()[actorA.String()]; p.GetData()["name"] != `"a2"` {
		t.Errorf("snapshot presence of %s: %v", actorA, p)
	}
	loaded, err := FromSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Presences(); len(got) != 2 || got[actorB]["name"] != `"b"` {
		t.Errorf("loaded presences %v", got)
	}
	clear := change(actorA, 2, 1)
	clear.PresenceChange = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
	if err := d.ApplyChanges([]*api.Change{clear}); err != nil {
		t.Fatal(err)
	}
	if got := d.Presences(); len(got) != 1 || got[actorB] == nil {
		t.Errorf("after clear: %v", got)
	}
	// The returned maps are copies.
	d.Presences()[actorB]["name"] = "changed"
	if d.Presences()[actorB]["name"] != `"b"` {
		t.Error("Presences returned the document's own map")
	}
}

// TestVersionVector checks the document's vector: the maximum of the changes' vectors plus
// its own lamport under the initial actor, continued from a snapshot's vector.
func TestVersionVector(t *testing.T) {
	d := New()
	c1 := change(actorA, 1, 5, setOpPB(rootTicket(), "k", intValue(tk(5, 1, actorA), 1), tk(5, 1, actorA)))
	c2 := change(actorB, 1, 3, setOpPB(rootTicket(), "j", intValue(tk(3, 1, actorB), 1), tk(3, 1, actorB)))
	c2.Id.VersionVector = VersionVectorToPB(crdt.VersionVector{actorB: 3, actorA: 2})
	if err := d.ApplyChanges([]*api.Change{c1, c2}); err != nil {
		t.Fatal(err)
	}
	want := crdt.VersionVector{actorA: 5, actorB: 3, crdt.InitialActorID: 7}
	if got := d.VersionVector(); !equalVectors(got, want) {
		t.Fatalf("vector %v, want %v", got, want)
	}
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	e, err := FromSnapshotAt(snap, d.VersionVector())
	if err != nil {
		t.Fatal(err)
	}
	c3 := change(actorA, 2, 6, setOpPB(rootTicket(), "k", intValue(tk(6, 1, actorA), 2), tk(6, 1, actorA)))
	if err := e.ApplyChanges([]*api.Change{c3}); err != nil {
		t.Fatal(err)
	}
	want = crdt.VersionVector{actorA: 6, actorB: 3, crdt.InitialActorID: 8}
	if got := e.VersionVector(); !equalVectors(got, want) {
		t.Fatalf("vector after snapshot %v, want %v", got, want)
	}
	if e.JSON() != `{"j":1,"k":2}` {
		t.Errorf("JSON %s", e.JSON())
	}
}

// TestSnapshotRefusals checks that snapshots that cannot be read are refused.
func TestSnapshotRefusals(t *testing.T) {
	bad := func(s *api.Snapshot) []byte {
		b, err := proto.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := map[string][]byte{
		"garbage":             {0xff, 0xff},
		"no root":             bad(&api.Snapshot{Presences: map[string]*api.Presence{actorA.String(): {}}}),
		"root not object":     bad(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: &api.JSONElement_JSONArray{CreatedAt: rootTicket()}}}}),
		"root without ticket": bad(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{}}}}),
		"bad presence key": bad(&api.Snapshot{
			Root:      &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{CreatedAt: rootTicket()}}},
			Presences: map[string]*api.Presence{"nothex": {}},
		}),
		"dead position without tickets": bad(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
			CreatedAt: rootTicket(),
			Nodes: []*api.RHTNode{{Key: "l", Element: &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: &api.JSONElement_JSONArray{
				CreatedAt: tk(1, 1, actorA), Nodes: []*api.RGANode{{}},
			}}}}},
		}}}}),
		"member without body": bad(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
			CreatedAt: rootTicket(), Nodes: []*api.RHTNode{{Key: "x"}},
		}}}}),
		"dedup registers of the wrong length": bad(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
			CreatedAt: rootTicket(),
			Nodes: []*api.RHTNode{{Key: "d", Element: &api.JSONElement{Body: &api.JSONElement_Counter_{Counter: &api.JSONElement_Counter{
				Type: api.ValueType_VALUE_TYPE_INTEGER_DEDUP_CNT, CreatedAt: tk(1, 1, actorA), HllRegisters: []byte{1, 2, 3},
			}}}}},
		}}}}),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := FromSnapshot(b); !errors.Is(err, ErrInvalidOperation) {
				t.Fatalf("error %v, want %v", err, ErrInvalidOperation)
			}
		})
	}
	d, err := FromSnapshot(nil)
	if err != nil || d.JSON() != "{}" {
		t.Fatalf("empty snapshot: %v %v", d, err)
	}
}

// TestArraySetValueIsNeverCollected follows the SDK: an ArraySet's value is indexed without
// a parent, so once removed it stays garbage (the SDK throws when collecting it).
func TestArraySetValueIsNeverCollected(t *testing.T) {
	d := baseDoc(t)
	err := d.ApplyChanges([]*api.Change{
		change(actorA, 2, 2, arraySetOpPB(tk(1, 2, actorA), tk(1, 3, actorA), intValue(tk(2, 1, actorA), 8), tk(2, 1, actorA))),
		change(actorA, 3, 3, removeOpPB(tk(1, 2, actorA), tk(2, 1, actorA), tk(3, 1, actorA))),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.JSON() != `{"c":1,"d":0,"l":[],"o":{},"s":"str"}` || d.GarbageLen() != 1 {
		t.Fatalf("JSON %s, garbage %d", d.JSON(), d.GarbageLen())
	}
	if n := d.GarbageCollect(crdt.VersionVector{actorA: 10}); n != 0 {
		t.Errorf("purged %d", n)
	}
	if d.GarbageLen() != 1 {
		t.Errorf("garbage %d after collection", d.GarbageLen())
	}
}
