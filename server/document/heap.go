package document

import "unsafe"

// Heap costs of the document's own parts, beside its root (see crdt's heap estimate).
var (
	documentHeap = int(unsafe.Sizeof(Document{})) + 3*48
	// presenceHeap is one client's entry in the presences and its map.
	presenceHeap = 2*mapEntryHeap + 48
	// mapEntryHeap is one entry of a small map of strings or actor IDs to values, slots of
	// about 32 bytes at two-thirds load.
	mapEntryHeap = 48
)

// HeapEstimate is roughly how many bytes of Go heap the document takes: its elements, nodes,
// tombstones and indexes, each counted at what it costs in memory, and its presences and
// clocks. It walks the whole document, so callers cache it. The document package's heap
// benchmarks compare it with the heap measured after building representative documents.
func (d *Document) HeapEstimate() int {
	n := documentHeap + d.root.HeapEstimate()
	for _, p := range d.presences {
		n += presenceHeap
		for k, v := range p {
			n += mapEntryHeap + len(k) + len(v)
		}
	}
	return n + len(d.vv)*mapEntryHeap + len(d.actorKeys)*(mapEntryHeap+24)
}
