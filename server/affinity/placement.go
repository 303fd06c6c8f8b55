package affinity

import (
	"hash/fnv"
	"math"
	"slices"
	"strconv"
)

// DefaultLoadFactor is the bound c of consistent hashing with bounded loads: no
// node is given a document while it holds more than c times the mean.
const DefaultLoadFactor = 1.25

// defaultVirtualNodes per member smooths the ring so that each node's share of
// the hash space is close to 1/N.
const defaultVirtualNodes = 128

// Ring places documents that have no live owner on members by consistent
// hashing with bounded loads. It only proposes an owner: the binding in the
// session store decides. A Ring is immutable; build a new one when membership
// changes, so readers need no lock.
type Ring struct {
	points  []ringPoint // sorted by hash
	members []string
	factor  float64
}

type ringPoint struct {
	hash   uint64
	member int // index into members
}

// NewRing builds a ring over the members (advertised addresses). factor <= 1
// selects DefaultLoadFactor.
func NewRing(members []string, factor float64) *Ring {
	if factor <= 1 {
		factor = DefaultLoadFactor
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	r := &Ring{members: ms, factor: factor, points: make([]ringPoint, 0, len(ms)*defaultVirtualNodes)}
	for i, m := range ms {
		for v := 0; v < defaultVirtualNodes; v++ {
			r.points = append(r.points, ringPoint{hash: hash64(m + "#" + strconv.Itoa(v)), member: i})
		}
	}
	slices.SortFunc(r.points, func(a, b ringPoint) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return a.member - b.member
	})
	return r
}

// Members returns the ring's members, sorted.
func (r *Ring) Members() []string { return slices.Clone(r.members) }

// Place returns the member that should own key, or "" if the ring is empty.
// loads holds the number of documents each member owns now (missing = 0). The
// walk starts at the key's point and takes the first member whose load is
// under the bound ceil(factor * (total+1) / N), so a membership change moves
// few documents while no member is pushed above the bound.
func (r *Ring) Place(key string, loads map[string]int) string {
	if len(r.members) == 0 {
		return ""
	}
	total := 0
	for _, m := range r.members {
		total += loads[m]
	}
	limit := int(math.Ceil(r.factor * float64(total+1) / float64(len(r.members))))
	h := hash64(key)
	start, _ := slices.BinarySearchFunc(r.points, h, func(p ringPoint, h uint64) int {
		switch {
		case p.hash < h:
			return -1
		case p.hash > h:
			return 1
		}
		return 0
	})
	seen := make([]bool, len(r.members))
	for i := 0; i < len(r.points); i++ {
		p := r.points[(start+i)%len(r.points)]
		if seen[p.member] {
			continue
		}
		seen[p.member] = true
		if m := r.members[p.member]; loads[m] < limit {
			return m
		}
	}
	// Unreachable while limit > mean, which factor > 1 guarantees; keep a
	// deterministic answer anyway.
	return r.members[r.points[start%len(r.points)].member]
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	// FNV alone clusters short, similar inputs ("node#1", "node#2"); a
	// finaliser spreads them over the whole ring.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
