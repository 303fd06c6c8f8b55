package document

import "github.com/yorkie-affinity/yorkie/server/document/crdt"

// RootObject is the document's root object, for reading only.
func (d *Document) RootObject() *crdt.Object {
	o, _ := d.root.Object().(*crdt.Object)
	return o
}

// Covers reports whether a change with version vector vv was made on a
// replica that had seen every change applied to d: for each actor d has
// applied changes of, vv holds at least that actor's last lamport. Such a
// change applied to d gives the state its maker had after making it.
func (d *Document) Covers(vv crdt.VersionVector) bool {
	for a, l := range d.vv {
		if a == crdt.InitialActorID {
			continue
		}
		if vv[a] < l {
			return false
		}
	}
	return true
}
