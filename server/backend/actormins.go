package backend

import (
	"iter"
	"slices"
)

// smallActorMins is how many actors an actorMins keeps in a slice before it
// moves them to a map.
const smallActorMins = 16

// actorMins holds the per-actor entries of a minVector. Most documents have
// a few actors, and a slice of their entries costs a fraction of a map of
// pointers for each of many documents (and gives the collector no pointer to
// walk per actor); a document with many moves to a map, so that finding an
// actor does not grow with them. Its zero value is empty.
type actorMins struct {
	small []actorEntry
	large map[string]*actorMin
}

type actorEntry struct {
	key string
	actorMin
}

func (s *actorMins) len() int {
	if s.large != nil {
		return len(s.large)
	}
	return len(s.small)
}

// get returns k's entry, or nil. The pointer is good until the next add or
// del.
func (s *actorMins) get(k string) *actorMin {
	if s.large != nil {
		return s.large[k]
	}
	for i := range s.small {
		if s.small[i].key == k {
			return &s.small[i].actorMin
		}
	}
	return nil
}

// add adds an entry for k, which has none, and returns it as get does.
func (s *actorMins) add(k string, a actorMin) *actorMin {
	if s.large == nil && len(s.small) < smallActorMins {
		s.small = append(s.small, actorEntry{key: k, actorMin: a})
		return &s.small[len(s.small)-1].actorMin
	}
	if s.large == nil {
		s.large = make(map[string]*actorMin, 2*smallActorMins)
		for _, e := range s.small {
			s.large[e.key] = &actorMin{min: e.min, atMin: e.atMin, holders: e.holders}
		}
		s.small = nil
	}
	p := &a
	s.large[k] = p
	return p
}

func (s *actorMins) del(k string) {
	if s.large != nil {
		delete(s.large, k)
		return
	}
	if i := slices.IndexFunc(s.small, func(e actorEntry) bool { return e.key == k }); i >= 0 {
		s.small = slices.Delete(s.small, i, i+1)
	}
}

// all yields every entry. The loop may del the entry it was given, and no
// other, and may not add.
func (s *actorMins) all() iter.Seq2[string, *actorMin] {
	return func(yield func(string, *actorMin) bool) {
		if s.large != nil {
			for k, a := range s.large {
				if !yield(k, a) {
					return
				}
			}
			return
		}
		// Backwards, so that deleting the entry given shifts only entries
		// already yielded.
		for i := len(s.small) - 1; i >= 0; i-- {
			if i >= len(s.small) {
				continue
			}
			if !yield(s.small[i].key, &s.small[i].actorMin) {
				return
			}
		}
	}
}
