package crdt

import "testing"

func TestRHTLastWriterWinsAndTombstones(t *testing.T) {
	t1, t2, t3 := Ticket{Lamport: 1}, Ticket{Lamport: 2}, Ticket{Lamport: 3}
	var r RHT
	if prev, w := r.Set("b", "1", t2); prev != nil || w == nil {
		t.Fatalf("first set: %v %v", prev, w)
	}
	if _, w := r.Set("b", "0", t1); w != nil {
		t.Fatal("an older set won")
	}
	if gc := r.Remove("b", t1); gc != nil {
		t.Fatal("an older removal won")
	}
	gc := r.Remove("b", t3)
	if len(gc) != 1 || !gc[0].IsRemoved() || gc[0].Value() != "1" || r.Len() != 0 {
		t.Fatalf("removal: %+v, len %d", gc, r.Len())
	}
	// An older set loses to the removal and hands it back for registration (which cancels it).
	if prev, w := r.Set("b", "2", t2); prev != gc[0] || w != nil {
		t.Fatalf("set under a tombstone: %v %v", prev, w)
	}
	// Removing a removed key returns the old tombstone and the new one.
	if gc2 := r.Remove("b", Ticket{Lamport: 4}); len(gc2) != 2 || gc2[0] != gc[0] {
		t.Fatalf("second removal: %+v", gc2)
	}
	// Removing an unknown key leaves a tombstone with an empty value.
	if gc3 := r.Remove("x", t1); len(gc3) != 1 || gc3[0].Value() != "" || gc3[0].GCKey() != t1.Key()+":x" {
		t.Fatalf("unknown key: %+v", gc3)
	}
	cur, _ := r.Get("b")
	r.Purge(gc[0]) // no longer the key's node
	if n, ok := r.Get("b"); !ok || n != cur {
		t.Fatal("purged a node that had been replaced")
	}
	r.Purge(cur)
	if _, ok := r.Get("b"); ok || len(r.Nodes()) != 1 {
		t.Fatalf("purge left %d nodes", len(r.Nodes()))
	}
}
