package backend

import "slices"

// smallActorSet is how many keys an actorSet keeps in a slice before it
// moves them to a map.
const smallActorSet = 16

// actorSet is a set of actor keys. Most documents have had a few clients,
// and a slice of their keys costs a fraction of a map's memory for each of
// many documents; a document that has had many moves to a map, so that
// looking a key up does not grow with them. Its zero value is empty.
type actorSet struct {
	small []string
	large map[string]struct{}
}

func (s *actorSet) len() int {
	if s.large != nil {
		return len(s.large)
	}
	return len(s.small)
}

func (s *actorSet) has(k string) bool {
	if s.large != nil {
		_, ok := s.large[k]
		return ok
	}
	return slices.Contains(s.small, k)
}

func (s *actorSet) add(k string) {
	if s.has(k) {
		return
	}
	if s.large != nil {
		s.large[k] = struct{}{}
		return
	}
	if len(s.small) < smallActorSet {
		s.small = append(s.small, k)
		return
	}
	s.large = make(map[string]struct{}, 2*smallActorSet)
	for _, v := range s.small {
		s.large[v] = struct{}{}
	}
	s.large[k] = struct{}{}
	s.small = nil
}
