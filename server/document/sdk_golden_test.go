package document

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// golden is a scenario recorded with the real SDK by testdata/sdkgen/generate.js.
type golden struct {
	Name    string `json:"name"`
	Changes []struct {
		ID       string   `json:"id"`
		Ops      []string `json:"ops"`
		Presence *struct {
			Type string            `json:"type"`
			Data map[string]string `json:"data"`
		} `json:"presence"`
	} `json:"changes"`
	Before goldenState `json:"before"`
	// Loaded is what a client reported after loading Before.Root as a snapshot.
	Loaded goldenState `json:"loaded"`
	GC     struct {
		VersionVector string      `json:"versionVector"`
		Purged        int         `json:"purged"`
		After         goldenState `json:"after"`
	} `json:"gc"`
}

type goldenSize struct {
	Data int `json:"data"`
	Meta int `json:"meta"`
}

type goldenState struct {
	JSON string `json:"json"`
	Size struct {
		Live goldenSize `json:"live"`
		GC   goldenSize `json:"gc"`
	} `json:"size"`
	GarbageLen    int    `json:"garbageLen"`
	VersionVector string `json:"versionVector"`
	Root          string `json:"root"`
}

func loadGoldens(t testing.TB) []golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "sdk", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var out []golden
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g golden
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, g)
	}
	return out
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// changes rebuilds the scenario's api.Changes from the SDK's encodings.
func (g golden) changes(t testing.TB) []*api.Change {
	t.Helper()
	var out []*api.Change
	for _, c := range g.Changes {
		ch := &api.Change{Id: &api.ChangeID{}}
		if err := proto.Unmarshal(mustHex(t, c.ID), ch.Id); err != nil {
			t.Fatal(err)
		}
		for _, o := range c.Ops {
			op := &api.Operation{}
			if err := proto.Unmarshal(mustHex(t, o), op); err != nil {
				t.Fatal(err)
			}
			ch.Operations = append(ch.Operations, op)
		}
		if p := c.Presence; p != nil {
			pc := &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_CLEAR}
			if p.Type == "put" {
				pc = &api.PresenceChange{Type: api.PresenceChange_CHANGE_TYPE_PUT, Presence: &api.Presence{Data: p.Data}}
			}
			ch.PresenceChange = pc
		}
		out = append(out, ch)
	}
	return out
}

func goldenVector(t testing.TB, s string) crdt.VersionVector {
	t.Helper()
	var pb api.VersionVector
	if err := proto.Unmarshal(mustHex(t, s), &pb); err != nil {
		t.Fatal(err)
	}
	vv, err := VersionVectorFromPB(&pb)
	if err != nil {
		t.Fatal(err)
	}
	return vv
}

func checkState(t *testing.T, d *Document, want goldenState, what string) {
	t.Helper()
	if got := d.JSON(); got != want.JSON {
		t.Errorf("%s: JSON\n got %s\nwant %s", what, got, want.JSON)
	}
	s := d.Size()
	got := [4]int{s.Live.Data, s.Live.Meta, s.GC.Data, s.GC.Meta}
	exp := [4]int{want.Size.Live.Data, want.Size.Live.Meta, want.Size.GC.Data, want.Size.GC.Meta}
	if got != exp {
		t.Errorf("%s: size (live data, live meta, gc data, gc meta) = %v, want %v", what, got, exp)
	}
	if got := d.GarbageLen(); got != want.GarbageLen {
		t.Errorf("%s: garbage length %d, want %d", what, got, want.GarbageLen)
	}
	if want.VersionVector != "" {
		wantVV := goldenVector(t, want.VersionVector)
		if gotVV := d.VersionVector(); !equalVectors(gotVV, wantVV) {
			t.Errorf("%s: version vector %v, want %v", what, gotVV, wantVV)
		}
	}
	// Our encoding is the SDK's but for the array elements we give their own position
	// tickets so that they read back in place (rgaNodesToPB, snapshotReorder).
	root, err := proto.MarshalOptions{Deterministic: true}.Marshal(withoutOwnPositions(elementToPB(d.root.Object())))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(root) != want.Root {
		t.Errorf("%s: root encoding differs from the SDK's\n got %x\nwant %s", what, root, want.Root)
	}
}

// withoutOwnPositions clears, in e and below, the position tickets of array elements
// positioned at their own creation, which the SDK's writer leaves out.
func withoutOwnPositions(e *api.JSONElement) *api.JSONElement {
	if o := e.GetJsonObject(); o != nil {
		for _, n := range o.GetNodes() {
			withoutOwnPositions(n.GetElement())
		}
	}
	if a := e.GetJsonArray(); a != nil {
		for _, n := range a.GetNodes() {
			if n.GetElement() == nil {
				continue
			}
			withoutOwnPositions(n.GetElement())
			created, err := elementCreatedAt(n.GetElement())
			if err == nil && proto.Equal(n.GetPositionMovedAt(), created) && proto.Equal(n.GetPositionCreatedAt(), created) {
				n.PositionCreatedAt, n.PositionMovedAt = nil, nil
			}
		}
	}
	return e
}

// elementCreatedAt is the creation ticket of an encoded element.
func elementCreatedAt(e *api.JSONElement) (*api.TimeTicket, error) {
	switch b := e.GetBody().(type) {
	case *api.JSONElement_JsonObject:
		return b.JsonObject.GetCreatedAt(), nil
	case *api.JSONElement_JsonArray:
		return b.JsonArray.GetCreatedAt(), nil
	case *api.JSONElement_Primitive_:
		return b.Primitive.GetCreatedAt(), nil
	case *api.JSONElement_Counter_:
		return b.Counter.GetCreatedAt(), nil
	case *api.JSONElement_Text_:
		return b.Text.GetCreatedAt(), nil
	case *api.JSONElement_Tree_:
		return b.Tree.GetCreatedAt(), nil
	}
	return nil, errors.New("element without a body")
}

func equalVectors(a, b crdt.VersionVector) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestSDKGoldenScenarios applies changes the SDK made and checks that the document reports
// what an SDK replica reported after the same changes: toSortedJSON, size, garbage length,
// version vector and the exact bytes of the root's encoding, before and after collecting
// garbage.
func TestSDKGoldenScenarios(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			d := New()
			if err := d.ApplyChanges(g.changes(t)); err != nil {
				t.Fatalf("apply: %v", err)
			}
			checkState(t, d, g.Before, "before gc")
			// Our snapshot reads back as the SDK reads its own, but in snapshotReorder, where
			// the SDK's reader moves an element and ours must read the document as it is.
			snap, err := d.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromSnapshot(snap)
			if err != nil {
				t.Fatalf("from our snapshot: %v", err)
			}
			want := g.Loaded.JSON
			if g.Name == "snapshotReorder" {
				if g.Loaded.JSON == g.Before.JSON {
					t.Errorf("the SDK reads its own snapshot back in order now: %s", g.Loaded.JSON)
				}
				want = g.Before.JSON
			}
			if back.JSON() != want {
				t.Errorf("our snapshot reads back as %s, want %s", back.JSON(), want)
			}
			if n := d.GarbageCollect(goldenVector(t, g.GC.VersionVector)); n != g.GC.Purged {
				t.Errorf("purged %d, want %d", n, g.GC.Purged)
			}
			checkState(t, d, g.GC.After, "after gc")
		})
	}
}

// TestSDKGoldenSnapshots reads the SDK's encoding of each scenario's root as a snapshot and
// checks that the document reports what an SDK client reported after loading the same
// snapshot, and that our own snapshot of it reads back the same.
func TestSDKGoldenSnapshots(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(g.Name, func(t *testing.T) {
			var root api.JSONElement
			if err := proto.Unmarshal(mustHex(t, g.Before.Root), &root); err != nil {
				t.Fatal(err)
			}
			snap, err := proto.Marshal(&api.Snapshot{Root: &root})
			if err != nil {
				t.Fatal(err)
			}
			d, err := FromSnapshot(snap)
			if err != nil {
				t.Fatalf("from snapshot: %v", err)
			}
			checkState(t, d, g.Loaded, "loaded")
			again, err := d.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			d2, err := FromSnapshot(again)
			if err != nil {
				t.Fatalf("from our snapshot: %v", err)
			}
			checkState(t, d2, g.Loaded, "reloaded")
		})
	}
}
