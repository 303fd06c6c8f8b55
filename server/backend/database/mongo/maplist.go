package mongo

import (
	"cmp"
	"slices"
)

// Maps whose keys are data are stored as lists of entries sorted by key:
// BSON document keys must not hold every character such keys may (base64
// actors in version vectors have "/" and "+", client metadata is user data
// and may hold dots or dollar signs).

// entry is one key of a map stored as a list.
type entry[V any] interface {
	key() string
	value() V
}

// toList stores m as a list of entries made by newEntry, sorted by key; a
// nil map stays nil, so that omitempty leaves the field out.
func toList[E entry[V], V any](m map[string]V, newEntry func(k string, v V) E) []E {
	if m == nil {
		return nil
	}
	out := make([]E, 0, len(m))
	for k, v := range m {
		out = append(out, newEntry(k, v))
	}
	slices.SortFunc(out, func(a, b E) int { return cmp.Compare(a.key(), b.key()) })
	return out
}

// fromList is the map a list made by toList stores.
func fromList[E entry[V], V any](list []E) map[string]V {
	if list == nil {
		return nil
	}
	out := make(map[string]V, len(list))
	for _, e := range list {
		out[e.key()] = e.value()
	}
	return out
}

// pair is one entry of a string map.
type pair struct {
	K string `bson:"k"`
	V string `bson:"v"`
}

func newPair(k, v string) pair { return pair{K: k, V: v} }
func (p pair) key() string     { return p.K }
func (p pair) value() string   { return p.V }

// lamport is one entry of a version vector (actor -> lamport).
type lamport struct {
	Actor string `bson:"a"`
	Value int64  `bson:"v"`
}

func newLamport(actor string, v int64) lamport { return lamport{Actor: actor, Value: v} }
func (l lamport) key() string                  { return l.Actor }
func (l lamport) value() int64                 { return l.Value }
