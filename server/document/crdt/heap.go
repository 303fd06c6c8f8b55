package crdt

import "unsafe"

// The heap estimate counts what a document's parts take in Go memory: each struct at the
// size class the allocator gives it, each string or slice at its capacity's class, and each
// map entry at its share of a map's slots. It is what the server's document cache is bounded
// by, so it must follow the heap (within a stated factor, checked by the document package's
// heap benchmarks), not the SDK's byte count, which leaves out pointers, indexes and the
// allocator's rounding.

// mapLoad is the average share of a map's slots in use: maps grow by doubling once 7/8 are
// full, so between two growths they are 7/16 to 7/8 full.
const mapLoad = 0.65

// sizeClass rounds an allocation of n bytes up to what the allocator hands out: the size
// classes grow by 8 or 16 bytes up to 256, then by an eighth to a quarter; beyond 32 KiB
// allocations take whole pages.
func sizeClass(n int) int {
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return (n + 7) &^ 7
	case n <= 256:
		return (n + 15) &^ 15
	case n <= 32<<10:
		// Classes in this range are about 12.5% apart.
		step := 1 << (bitLen(n) - 4)
		return (n + step - 1) / step * step
	default:
		return (n + 8191) &^ 8191
	}
}

func bitLen(n int) int {
	l := 0
	for ; n > 0; n >>= 1 {
		l++
	}
	return l
}

// mapEntry is the heap one entry of a map with keys and values of these sizes takes: a
// slot of key, value and control byte, at the average load.
func mapEntry(key, value uintptr) int {
	return int(float64(key+value+1) / mapLoad)
}

var (
	ticketSize     = unsafe.Sizeof(Ticket{})
	pointerSize    = unsafe.Sizeof(uintptr(0))
	stringSize     = unsafe.Sizeof("")
	sliceSize      = unsafe.Sizeof([]byte(nil))
	elementPairSz  = unsafe.Sizeof(elementPair{})
	gcEntrySize    = unsafe.Sizeof(gcEntry{})
	removedSlotSz  = unsafe.Sizeof(removedSlot{})
	gcSlotSize     = unsafe.Sizeof(gcSlot{})
	rhtMemberSize  = sizeClass(int(unsafe.Sizeof(rhtMember{})))
	objectSize     = sizeClass(int(unsafe.Sizeof(Object{})))
	arraySize      = sizeClass(int(unsafe.Sizeof(Array{})))
	listNodeSize   = sizeClass(int(unsafe.Sizeof(listNode{})))
	arrayEntrySize = sizeClass(int(unsafe.Sizeof(arrayEntry{})))
	primitiveSize  = sizeClass(int(unsafe.Sizeof(Primitive{})))
	counterSize    = sizeClass(int(unsafe.Sizeof(Counter{})))
	textSize       = sizeClass(int(unsafe.Sizeof(Text{}))) + sizeClass(int(unsafe.Sizeof(rgaTreeSplit{})))
	textNodeSize   = sizeClass(int(unsafe.Sizeof(TextNode{})))
	textValueSize  = sizeClass(int(unsafe.Sizeof(TextValue{})))
	rhtSize        = sizeClass(int(unsafe.Sizeof(RHT{})))
	rhtNodeSize    = sizeClass(int(unsafe.Sizeof(RHTNode{})))
	treeSize       = sizeClass(int(unsafe.Sizeof(Tree{})))
	treeNodeSize   = sizeClass(int(unsafe.Sizeof(TreeNode{})))
	treeAttrsSize  = sizeClass(int(unsafe.Sizeof(treeAttrs{})))
	treeAttrSize   = sizeClass(int(unsafe.Sizeof(treeAttr{})))
	nodeIDSize     = sizeClass(int(unsafe.Sizeof(TreeNodeID{})))
	emptyMapSize   = 48
)

// HeapEstimate is the heap the root takes: its element tree with every tombstone not
// collected yet, and the indexes over it.
func (r *Root) HeapEstimate() int {
	n := sizeClass(int(unsafe.Sizeof(Root{}))) + 4*emptyMapSize
	n += len(r.elements) * mapEntry(ticketSize, elementPairSz)
	n += len(r.removed) * mapEntry(ticketSize, 8)
	n += sizeClass(cap(r.removedOrder) * int(removedSlotSz))
	for k := range r.gcPairs {
		n += mapEntry(stringSize, gcEntrySize) + sizeClass(len(k))
	}
	n += sizeClass(cap(r.gcOrder) * int(gcSlotSize))
	return n + elementHeap(r.object)
}

// elementHeap is the heap of one element and everything below it.
func elementHeap(e Element) int {
	switch e := e.(type) {
	case *Object:
		return e.heap()
	case *Array:
		return e.heap()
	case *Primitive:
		return primitiveSize + sizeClass(len(e.str)) + sizeClass(cap(e.bytes))
	case *Counter:
		n := counterSize
		if e.hll != nil {
			n += sizeClass(int(unsafe.Sizeof(hll{}))) + sizeClass(cap(e.hll.registers))
		}
		return n
	case *Text:
		return e.heap()
	case *Tree:
		return e.heap()
	}
	return 0
}

func (o *Object) heap() int {
	n := objectSize + 2*emptyMapSize
	n += len(o.members.byCreatedAt) * mapEntry(ticketSize, pointerSize)
	n += len(o.members.byKey) * mapEntry(stringSize, pointerSize)
	for m := o.members.head; m != nil; m = m.next {
		// The key's bytes are shared by the member and the key index.
		n += rhtMemberSize + sizeClass(len(m.key)) + elementHeap(m.elem)
	}
	return n
}

func (a *Array) heap() int {
	n := arraySize + 2*emptyMapSize + listNodeSize
	n += len(a.list.nodes) * mapEntry(ticketSize, pointerSize)
	n += len(a.list.entries) * mapEntry(ticketSize, pointerSize)
	for ln := a.list.head.next; ln != nil; ln = ln.next {
		n += listNodeSize
		if ln.entry != nil && ln.entry.pos == ln {
			n += arrayEntrySize + elementHeap(ln.entry.elem)
		}
	}
	return n
}

func (t *Text) heap() int {
	n := textSize + emptyMapSize + textNodeSize
	for _, parts := range t.rga.byID {
		n += mapEntry(ticketSize, sliceSize) + sizeClass(cap(parts)*int(pointerSize))
	}
	for tn := t.rga.head.next; tn != nil; tn = tn.next {
		n += textNodeSize
		if v := tn.value; v != nil {
			n += textValueSize + sizeClass(cap(v.content)*2)
			if v.attrs != nil {
				n += v.attrs.heap()
			}
		}
	}
	return n
}

func (r *RHT) heap() int {
	n := rhtSize + sizeClass(cap(r.nodes)*int(pointerSize))
	for _, nd := range r.nodes {
		n += rhtNodeSize + sizeClass(len(nd.key)) + sizeClass(len(nd.value))
	}
	return n
}

func (t *Tree) heap() int {
	n := treeSize + emptyMapSize
	for _, parts := range t.byID {
		n += mapEntry(ticketSize, sliceSize) + sizeClass(cap(parts)*int(pointerSize))
	}
	walkAll(t.root, 0, func(tn *TreeNode, _ int) {
		n += treeNodeSize + sizeClass(cap(tn.text)*2) + sizeClass(cap(tn.children)*int(pointerSize))
		for _, p := range []*TreeNodeID{tn.insPrev, tn.insNext, tn.mergedFrom, tn.mergedInto} {
			if p != nil {
				n += nodeIDSize
			}
		}
		if tn.mergedAt != nil {
			n += sizeClass(int(ticketSize))
		}
		if tn.attrs != nil {
			n += treeAttrsSize + sizeClass(cap(tn.attrs.nodes)*int(pointerSize))
			for _, a := range tn.attrs.nodes {
				n += treeAttrSize + sizeClass(len(a.key)) + sizeClass(len(a.value))
			}
		}
	})
	return n
}
