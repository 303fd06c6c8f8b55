// Package smallmap holds a map and a set keyed by strings that cost a slice
// while they are small and a map once they are not. The server keeps many
// of them that almost always hold a few keys (the actors of each document,
// the documents each client has attached): a slice of a few entries costs a
// fraction of a map's memory and gives the garbage collector less to walk,
// and past a few keys the map keeps lookups from growing with them.
package smallmap

import (
	"iter"
	"slices"
)

// Small is how many keys a Map or Set keeps in a slice before it moves them
// to a map.
const Small = 16

// Map maps strings to values of V. Its zero value is empty and ready to use.
type Map[V any] struct {
	small []entry[V]
	large map[string]*V
}

type entry[V any] struct {
	key string
	val V
}

// Len is how many keys the map holds.
func (m *Map[V]) Len() int {
	if m.large != nil {
		return len(m.large)
	}
	return len(m.small)
}

// Get returns k's value, or nil. The pointer is good until the next Add or
// Delete.
func (m *Map[V]) Get(k string) *V {
	if m.large != nil {
		return m.large[k]
	}
	for i := range m.small {
		if m.small[i].key == k {
			return &m.small[i].val
		}
	}
	return nil
}

// Add adds k, which the map does not hold, with v, and returns its value as
// Get does.
func (m *Map[V]) Add(k string, v V) *V {
	if m.large == nil && len(m.small) < Small {
		m.small = append(m.small, entry[V]{key: k, val: v})
		return &m.small[len(m.small)-1].val
	}
	if m.large == nil {
		m.large = make(map[string]*V, 2*Small)
		for _, e := range m.small {
			m.large[e.key] = &e.val
		}
		m.small = nil
	}
	m.large[k] = &v
	return &v
}

// Delete takes k out of the map.
func (m *Map[V]) Delete(k string) {
	if m.large != nil {
		delete(m.large, k)
		return
	}
	if i := slices.IndexFunc(m.small, func(e entry[V]) bool { return e.key == k }); i >= 0 {
		m.small = slices.Delete(m.small, i, i+1)
	}
}

// All yields every key and its value, in no particular order. The loop may
// Delete the key it was given, and no other, and may not Add.
func (m *Map[V]) All() iter.Seq2[string, *V] {
	return func(yield func(string, *V) bool) {
		if m.large != nil {
			for k, v := range m.large {
				if !yield(k, v) {
					return
				}
			}
			return
		}
		// Backwards, so that deleting the entry given shifts only entries
		// already yielded.
		for i := len(m.small) - 1; i >= 0; i-- {
			if i >= len(m.small) {
				continue
			}
			if !yield(m.small[i].key, &m.small[i].val) {
				return
			}
		}
	}
}

// Set is a set of strings. Its zero value is empty and ready to use.
type Set struct {
	m Map[struct{}]
}

// Len is how many keys the set holds.
func (s *Set) Len() int { return s.m.Len() }

// Has reports whether the set holds k.
func (s *Set) Has(k string) bool { return s.m.Get(k) != nil }

// Add puts k in the set.
func (s *Set) Add(k string) {
	if !s.Has(k) {
		s.m.Add(k, struct{}{})
	}
}

// Remove takes k out of the set.
func (s *Set) Remove(k string) { s.m.Delete(k) }

// AppendTo appends the keys, in no particular order, to out.
func (s *Set) AppendTo(out []string) []string {
	for k := range s.m.All() {
		out = append(out, k)
	}
	return out
}
