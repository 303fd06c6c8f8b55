package memory

import "slices"

// smallAttachedSet is how many document IDs an attachedSet keeps in a slice
// before it moves them to a map.
const smallAttachedSet = 16

// attachedSet is the set of documents one client has attached now. Most
// clients hold a few at a time, and a slice of them costs a fraction of a
// map's memory for each of many clients; a client holding many moves to a
// map, so that adding and removing do not grow with what it holds.
type attachedSet struct {
	small []string
	large map[string]struct{}
}

func (s *attachedSet) len() int {
	if s.large != nil {
		return len(s.large)
	}
	return len(s.small)
}

func (s *attachedSet) add(id string) {
	if s.large != nil {
		s.large[id] = struct{}{}
		return
	}
	if slices.Contains(s.small, id) {
		return
	}
	if len(s.small) < smallAttachedSet {
		s.small = append(s.small, id)
		return
	}
	s.large = make(map[string]struct{}, 2*smallAttachedSet)
	for _, v := range s.small {
		s.large[v] = struct{}{}
	}
	s.large[id] = struct{}{}
	s.small = nil
}

func (s *attachedSet) remove(id string) {
	if s.large != nil {
		delete(s.large, id)
		return
	}
	if i := slices.Index(s.small, id); i >= 0 {
		s.small = slices.Delete(s.small, i, i+1)
	}
}

// appendTo appends the IDs to out.
func (s *attachedSet) appendTo(out []string) []string {
	if s.large != nil {
		for id := range s.large {
			out = append(out, id)
		}
		return out
	}
	return append(out, s.small...)
}
