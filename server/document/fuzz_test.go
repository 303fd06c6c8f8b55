package document

import (
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// FuzzApplyChanges feeds arbitrary bytes, read as an api.ChangePack, to a document: its
// snapshot (if any) to FromSnapshot, its changes to ApplyChanges, and its vector to
// GarbageCollect, then encodes and reloads the result. Nothing may panic. The seeds are the
// SDK scenarios of testdata/sdk and the corpus under testdata/fuzz.
func FuzzApplyChanges(f *testing.F) {
	for _, g := range loadGoldens(f) {
		b, err := proto.Marshal(&api.ChangePack{Changes: g.changes(f)})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pack api.ChangePack
		if err := proto.Unmarshal(data, &pack); err != nil {
			return
		}
		d, err := FromSnapshot(pack.GetSnapshot())
		if err != nil {
			return
		}
		if err := d.ApplyChanges(pack.GetChanges()); err != nil {
			return
		}
		_ = d.JSON()
		_ = d.Size()
		_ = d.GarbageLen()
		_ = d.Presences()
		snap, err := d.Snapshot()
		if err != nil {
			t.Fatalf("snapshot of an applied document: %v", err)
		}
		if vv, err := VersionVectorFromPB(pack.GetVersionVector()); err == nil {
			d.GarbageCollect(vv)
			_ = d.JSON()
			_ = d.GarbageLen()
		}
		if _, err := FromSnapshot(snap); err != nil {
			t.Fatalf("our own snapshot does not load: %v", err)
		}
	})
}
