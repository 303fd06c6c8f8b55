// Package smallset holds a set of strings that costs a slice while it is
// small and a map once it is not. The server keeps many such sets that
// almost always hold a few keys (the actors of each document, the
// documents each client has attached): a slice of a few strings costs a
// fraction of a map's memory and gives the garbage collector less to walk,
// and past a few keys the map keeps lookups from growing with the set.
package smallset

import "slices"

// small is how many keys a Strings keeps in a slice before it moves them to
// a map.
const small = 16

// Strings is a set of strings. Its zero value is empty and ready to use.
type Strings struct {
	small []string
	large map[string]struct{}
}

// Len is how many keys the set holds.
func (s *Strings) Len() int {
	if s.large != nil {
		return len(s.large)
	}
	return len(s.small)
}

// Has reports whether the set holds k.
func (s *Strings) Has(k string) bool {
	if s.large != nil {
		_, ok := s.large[k]
		return ok
	}
	return slices.Contains(s.small, k)
}

// Add puts k in the set.
func (s *Strings) Add(k string) {
	if s.large != nil {
		s.large[k] = struct{}{}
		return
	}
	if slices.Contains(s.small, k) {
		return
	}
	if len(s.small) < small {
		s.small = append(s.small, k)
		return
	}
	s.large = make(map[string]struct{}, 2*small)
	for _, v := range s.small {
		s.large[v] = struct{}{}
	}
	s.large[k] = struct{}{}
	s.small = nil
}

// Remove takes k out of the set.
func (s *Strings) Remove(k string) {
	if s.large != nil {
		delete(s.large, k)
		return
	}
	if i := slices.Index(s.small, k); i >= 0 {
		s.small = slices.Delete(s.small, i, i+1)
	}
}

// AppendTo appends the keys, in no particular order, to out.
func (s *Strings) AppendTo(out []string) []string {
	if s.large != nil {
		for k := range s.large {
			out = append(out, k)
		}
		return out
	}
	return append(out, s.small...)
}
