package document

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// textRun is one seeded run of testdata/text_sdk.cjs: the changes in server order, the
// collections made along the way and the state of an SDK document that applied them all.
type textRun struct {
	Seed   int64 `json:"seed"`
	Events []struct {
		Change *struct {
			ID  string   `json:"id"`
			Ops []string `json:"ops"`
		} `json:"change"`
		// Refused is the SDK's error when it could not apply the change.
		Refused string `json:"refused"`
		GC      *struct {
			VV        map[string]string `json:"vv"`
			Collected int               `json:"collected"`
			After     textSDKState      `json:"after"`
		} `json:"gc"`
	} `json:"events"`
	Refused bool         `json:"refused"`
	Final   textSDKState `json:"final"`
	Clients []string     `json:"clients"`
}

type textSDKState struct {
	JSON       string `json:"json"`
	Root       string `json:"root"`
	GarbageLen int    `json:"garbageLen"`
	Size       struct {
		Live crdt.DataSize `json:"live"`
		GC   crdt.DataSize `json:"gc"`
	} `json:"size"`
}

// runSDK runs the text generator with the real SDK; without Node or the SDK installed the
// test is skipped, or fails where the servers are required (testenv).
func runSDK(t *testing.T, script string, input any) []byte {
	t.Helper()
	node := testenv.LookBinary(t, "node")
	modules, err := filepath.Abs(filepath.Join("..", "..", "test", "e2e", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@yorkie-js", "sdk")); err != nil {
		testenv.Unavailable(t, "the SDK differential test needs the SDK: run npm ci in test/e2e")
	}
	arg, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", script), string(arg))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return out
}

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// canonicalRoot re-encodes a root JSONElement deterministically (maps sorted by key), after
// dropping the ins_prev_id links the server writes and the SDK does not.
func canonicalRoot(t *testing.T, b []byte) []byte {
	t.Helper()
	var e api.JSONElement
	if err := proto.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	var strip func(e *api.JSONElement)
	strip = func(e *api.JSONElement) {
		switch body := e.GetBody().(type) {
		case *api.JSONElement_Text_:
			for _, n := range body.Text.GetNodes() {
				n.InsPrevId = nil
			}
		case *api.JSONElement_JsonObject:
			for _, m := range body.JsonObject.GetNodes() {
				strip(m.GetElement())
			}
		case *api.JSONElement_JsonArray:
			for _, m := range body.JsonArray.GetNodes() {
				strip(m.GetElement())
			}
		}
	}
	strip(&e)
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ourRoot(t *testing.T, d *Document) []byte {
	t.Helper()
	snap, err := d.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var s api.Snapshot
	if err := proto.Unmarshal(snap, &s); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(s.GetRoot())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compareTextState(t *testing.T, d *Document, want textSDKState, what string) {
	t.Helper()
	if got := d.JSON(); got != want.JSON {
		t.Fatalf("%s: JSON\n got %s\nwant %s", what, got, want.JSON)
	}
	if got := d.GarbageLen(); got != want.GarbageLen {
		t.Errorf("%s: garbage length %d, want %d", what, got, want.GarbageLen)
	}
	if s := d.Size(); s.Live != want.Size.Live || s.GC != want.Size.GC {
		t.Errorf("%s: size %+v, want live %+v gc %+v", what, s, want.Size.Live, want.Size.GC)
	}
	if got, exp := canonicalRoot(t, ourRoot(t, d)), canonicalRoot(t, decodeB64(t, want.Root)); !bytes.Equal(got, exp) {
		var g, e api.JSONElement
		_ = proto.Unmarshal(got, &g)
		_ = proto.Unmarshal(exp, &e)
		t.Errorf("%s: snapshot root differs\n got %v\nwant %v", what, &g, &e)
	}
}

func vvFromHex(t *testing.T, m map[string]string) crdt.VersionVector {
	t.Helper()
	vv := make(crdt.VersionVector, len(m))
	for a, l := range m {
		actor, err := crdt.ActorIDFromHex(a)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		vv[actor] = n
	}
	return vv
}

// Three SDK clients edit, style, undo and redo one text concurrently; the server model
// applies their changes in push order and must end exactly where an SDK document applying
// the same changes ends: JSON, garbage, sizes, collections and snapshot.
func TestTextMatchesSDK(t *testing.T) {
	seeds := make([]int64, 24)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	out := runSDK(t, "text_sdk.cjs", map[string]any{"seeds": seeds, "clients": 3, "steps": 160})
	var runs []textRun
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatal(err)
	}
	refused := 0
	var snapshots []string
	for _, run := range runs {
		if !run.Refused && len(run.Clients) == 0 {
			t.Fatalf("seed %d: no result", run.Seed)
		}
		for i, c := range run.Clients {
			if c != run.Final.JSON {
				t.Fatalf("seed %d: SDK client %d did not converge:\n%s\n%s", run.Seed, i, c, run.Final.JSON)
			}
		}
		d := New()
		for i, ev := range run.Events {
			switch {
			case ev.Change != nil:
				ch := &api.Change{Id: &api.ChangeID{}}
				if err := proto.Unmarshal(decodeB64(t, ev.Change.ID), ch.Id); err != nil {
					t.Fatal(err)
				}
				for _, o := range ev.Change.Ops {
					op := &api.Operation{}
					if err := proto.Unmarshal(decodeB64(t, o), op); err != nil {
						t.Fatal(err)
					}
					ch.Operations = append(ch.Operations, op)
				}
				err := d.ApplyChanges([]*api.Change{ch})
				if ev.Refused != "" {
					// The SDK could not apply it; the server must refuse it too.
					if !errors.Is(err, ErrElementNotFound) && !errors.Is(err, ErrInvalidOperation) {
						t.Fatalf("seed %d event %d: the SDK refused the change (%s), we returned %v", run.Seed, i, ev.Refused, err)
					}
					refused++
					break
				}
				if err != nil {
					t.Fatalf("seed %d event %d: %v", run.Seed, i, err)
				}
			case ev.GC != nil:
				if got := d.GarbageCollect(vvFromHex(t, ev.GC.VV)); got != ev.GC.Collected {
					t.Errorf("seed %d event %d: collected %d, want %d", run.Seed, i, got, ev.GC.Collected)
				}
				compareTextState(t, d, ev.GC.After, "seed "+strconv.FormatInt(run.Seed, 10)+" after gc")
			}
		}
		if run.Refused {
			continue
		}
		compareTextState(t, d, run.Final, "seed "+strconv.FormatInt(run.Seed, 10))
		if t.Failed() {
			return
		}
		snap, err := d.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		snapshots = append(snapshots, base64.StdEncoding.EncodeToString(snap))
	}

	// Our snapshots, read back by us and by the SDK, must give the same documents.
	out = runSDK(t, "text_sdk.cjs", map[string]any{"load": snapshots})
	var loaded []textSDKState
	if err := json.Unmarshal(out, &loaded); err != nil {
		t.Fatal(err)
	}
	for i, want := range loaded {
		snap := decodeB64(t, snapshots[i])
		d, err := FromSnapshot(snap)
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		compareTextState(t, d, want, "snapshot "+strconv.Itoa(i)+" loaded")
		again, err := d.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, snap) {
			t.Errorf("snapshot %d: reading and writing it again changed its bytes", i)
		}
	}
	t.Logf("%d runs, %d ended with a change the SDK and the server both refuse", len(runs), refused)
}
