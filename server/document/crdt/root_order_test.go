package crdt

import "testing"

// TestGarbageCollectInRegistrationOrder checks that collection visits removed elements in the
// order they were removed, as the SDK's Set does. Here a live object holds a value with the
// same ID as a child of a removed object (what an undo that re-adds a copy leaves): the
// removed object comes first and takes the ID with it, so the later value is never visited
// and stays in its object as a tombstone.
func TestGarbageCollectInRegistrationOrder(t *testing.T) {
	// Map order would pass by chance half of the time: build it many times.
	for range 20 {
		root := NewObject(InitialTicket)
		removed := NewObject(at(2, actor1))
		removed.Set("x", intPrim(t, 1, at(3, actor1)), at(3, actor1))
		root.Set("c", removed, at(2, actor1))
		r := NewRoot(root)

		holder := NewObject(at(5, actor1))
		copied := intPrim(t, 1, at(3, actor1))
		holder.Set("x", copied, at(5, actor1))
		root.Set("d", holder, at(5, actor1))
		r.RegisterElement(holder, root)

		if _, ok := root.RemoveChild(removed.CreatedAt(), at(6, actor1)); !ok {
			t.Fatal("remove the first object")
		}
		r.RegisterRemovedElement(removed)
		if _, ok := holder.RemoveChild(copied.CreatedAt(), at(7, actor1)); !ok {
			t.Fatal("remove the copied value")
		}
		r.RegisterRemovedElement(copied)

		if n := r.GarbageCollect(VersionVector{actor1: 7}); n != 2 {
			t.Fatalf("collected %d elements, want the object and its child", n)
		}
		if holder.Len() != 1 {
			t.Fatalf("the copied value was purged from its object; the SDK never visits it")
		}
		if got := r.GarbageLen(); got != 0 {
			t.Fatalf("GarbageLen %d after collecting, want 0", got)
		}
	}
}
