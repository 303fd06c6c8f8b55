package crdt

// VersionVector maps each actor to the highest lamport of it that a replica has seen.
type VersionVector map[ActorID]int64

// AfterOrEqual reports whether the vector has seen t: its entry for t's actor is at least
// t's lamport. An actor the vector does not name has seen nothing.
func (v VersionVector) AfterOrEqual(t Ticket) bool {
	l, ok := v[t.Actor]
	return ok && l >= t.Lamport
}

// Max returns the element-wise maximum of v and o as a new vector.
func (v VersionVector) Max(o VersionVector) VersionVector {
	m := make(VersionVector, len(v)+len(o))
	for a, l := range v {
		m[a] = l
	}
	for a, l := range o {
		if cur, ok := m[a]; !ok || l > cur {
			m[a] = l
		}
	}
	return m
}

// MaxLamport returns the highest lamport in the vector (0 when empty).
func (v VersionVector) MaxLamport() int64 {
	var max int64
	for _, l := range v {
		if l > max {
			max = l
		}
	}
	return max
}

// Copy returns an independent copy of v.
func (v VersionVector) Copy() VersionVector {
	c := make(VersionVector, len(v))
	for a, l := range v {
		c[a] = l
	}
	return c
}
