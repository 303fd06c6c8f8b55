package document

import (
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// heapFactor is how far HeapEstimate may be from the heap measured, either way.
const heapFactor = 1.5

// BenchmarkHeapEstimate builds representative documents (an object, an array, a text and a
// tree, each with tombstones), both by applying changes and by reading their snapshot as a
// rebuild does, measures the heap each keeps (runtime.MemStats after collection) and reports
// it with HeapEstimate's figure and their ratio, and the SDK's size measure's ratio to it. It fails when the estimate is off by more
// than heapFactor. Each iteration measures once; run it with -benchtime=1x or a few.
func BenchmarkHeapEstimate(b *testing.B) {
	for _, doc := range []struct {
		name  string
		build func(testing.TB) *Document
	}{
		{"object", heapObjectDoc},
		{"array", heapArrayDoc},
		{"text", heapTextDoc},
		{"tree", heapTreeDoc},
	} {
		for _, how := range []string{"applied", "from-snapshot"} {
			b.Run(doc.name+"/"+how, func(b *testing.B) {
				var measured, estimated, sdkSize float64
				for range b.N {
					build := func() *Document { return doc.build(b) }
					if how == "from-snapshot" {
						snap, err := doc.build(b).Snapshot()
						if err != nil {
							b.Fatal(err)
						}
						build = func() *Document {
							d, err := FromSnapshot(snap)
							if err != nil {
								b.Fatal(err)
							}
							return d
						}
					}
					d, heap := measureHeap(build)
					measured += float64(heap)
					estimated += float64(d.HeapEstimate())
					sdkSize += float64(d.Size().Total())
				}
				n := float64(b.N)
				measured, estimated, sdkSize = measured/n, estimated/n, sdkSize/n
				ratio := estimated / measured
				b.ReportMetric(measured, "heap-B")
				b.ReportMetric(estimated, "estimate-B")
				b.ReportMetric(ratio, "estimate/heap")
				// What the cache counted before: the SDK's byte measure.
				b.ReportMetric(sdkSize/measured, "sdk-size/heap")
				if ratio > heapFactor || ratio < 1/heapFactor {
					b.Fatalf("estimate %.0f B, heap %.0f B: off by more than %.1fx", estimated, measured, heapFactor)
				}
			})
		}
	}
}

// measureHeap returns what build returns and the heap it keeps alive.
func measureHeap(build func() *Document) (*Document, int64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(d)
	return d, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

const heapElements = 10000

// heapObjectDoc is an object of heapElements string keys, a fifth of them set again (the old
// values are tombstones), applied in changes of 100 operations.
func heapObjectDoc(tb testing.TB) *Document {
	d := New()
	obj := tk(1, 1, actorA)
	apply(tb, d, change(actorA, 1, 1, setOpPB(rootTicket(), "o", containerValue(obj, false), obj)))
	lamport := int64(1)
	for lo := 0; lo < heapElements*6/5; lo += 100 {
		lamport++
		ops := make([]*api.Operation, 0, 100)
		for i := lo; i < lo+100; i++ {
			at := tk(lamport, uint32(i-lo+1), actorA)
			ops = append(ops, setOpPB(obj, fmt.Sprint("key", i%heapElements), stringValue(at, fmt.Sprint("value ", i)), at))
		}
		apply(tb, d, change(actorA, uint32(lamport), lamport, ops...))
	}
	return d
}

// heapArrayDoc is an array of heapElements integers, each added after the previous, a fifth
// of them removed.
func heapArrayDoc(tb testing.TB) *Document {
	d := New()
	arr := tk(1, 1, actorA)
	apply(tb, d, change(actorA, 1, 1, setOpPB(rootTicket(), "a", containerValue(arr, true), arr)))
	prev, lamport := rootTicket(), int64(1)
	for lo := 0; lo < heapElements; lo += 100 {
		lamport++
		ops := make([]*api.Operation, 0, 100)
		for i := lo; i < lo+100; i++ {
			at := tk(lamport, uint32(i-lo+1), actorA)
			ops = append(ops, addOpPB(arr, prev, intValue(at, int32(i)), at))
			prev = at
		}
		apply(tb, d, change(actorA, uint32(lamport), lamport, ops...))
	}
	lamport++
	var removes []*api.Operation
	for i := 0; i < heapElements; i += 5 {
		removes = append(removes, removeOpPB(arr, tk(int64(2+i/100), uint32(i%100+1), actorA), tk(lamport, uint32(len(removes)+1), actorA)))
	}
	apply(tb, d, change(actorA, uint32(lamport), lamport, removes...))
	return d
}

// heapTextDoc is a text of heapElements characters typed one change each, every tenth one
// deleted again and every hundredth styled bold.
func heapTextDoc(tb testing.TB) *Document {
	d := New()
	text := tk(1, 1, actorA)
	apply(tb, d, change(actorA, 1, 1, setOpPB(rootTicket(), "t", textValue(text), text)))
	prev := textPos(rootTicket(), 0, 0)
	lamport := int64(1)
	for i := 0; i < heapElements; i++ {
		lamport++
		apply(tb, d, change(actorA, uint32(lamport), lamport, editOpPB(text, prev, prev, string(rune('a'+i%26)), nil, tk(lamport, 1, actorA))))
		cur := textPos(tk(lamport, 1, actorA), 0, 1)
		switch {
		case i%10 == 9:
			lamport++
			apply(tb, d, change(actorA, uint32(lamport), lamport, editOpPB(text, textPos(tk(lamport-1, 1, actorA), 0, 0), cur, "", nil, tk(lamport, 1, actorA))))
		case i%100 == 50:
			lamport++
			apply(tb, d, change(actorA, uint32(lamport), lamport, styleOpPB(text, textPos(tk(lamport-1, 1, actorA), 0, 0), cur, map[string]string{"bold": "true"}, nil, tk(lamport, 1, actorA))))
		}
		prev = cur
	}
	return d
}

// heapTreeDoc is a tree of heapElements/5 paragraphs of "hello world", read from a snapshot,
// with a character typed into each paragraph (splitting its text) and every tenth paragraph's
// first text removed.
func heapTreeDoc(tb testing.TB) *Document {
	paragraphs := heapElements / 5
	snap, err := proto.Marshal(&api.Snapshot{Root: &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{
		CreatedAt: rootTicket(),
		Nodes: []*api.RHTNode{{Key: "t", Element: &api.JSONElement{Body: &api.JSONElement_Tree_{
			Tree: treeDocPB(paragraphs, "hello world"),
		}}}},
	}}}})
	if err != nil {
		tb.Fatal(err)
	}
	d, err := FromSnapshotAt(snap, nil)
	if err != nil {
		tb.Fatal(err)
	}
	lamport := int64(1)
	for i := 0; i < paragraphs; i++ {
		lamport++
		typed := &api.TreeNodes{Content: []*api.TreeNode{{Id: tid(lamport, 1, 0), Type: "text", Value: "x"}}}
		apply(tb, d, change(actorA, uint32(lamport), lamport, treeEditPB(inText(i), inText(i), []*api.TreeNodes{typed}, 0, tt(lamport, 1))))
		if i%10 == 0 {
			lamport++
			from := &api.TreePos{ParentId: tid(1, uint32(2+2*i), 0), LeftSiblingId: tid(1, uint32(2+2*i), 0)}
			apply(tb, d, change(actorA, uint32(lamport), lamport, treeEditPB(from, inText(i), nil, 0, tt(lamport, 1))))
		}
	}
	return d
}

func apply(tb testing.TB, d *Document, c *api.Change) {
	tb.Helper()
	if err := d.ApplyChanges([]*api.Change{c}); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkHeapEstimateWalk is the cost of one HeapEstimate of the 10k-key object document,
// which the server's cache pays when a document's size has moved by a quarter.
func BenchmarkHeapEstimateWalk(b *testing.B) {
	d := heapObjectDoc(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		_ = d.HeapEstimate()
	}
}
