package backend

import "time"

// minVVRefresh is how often the minimum synced version vector is recomputed
// over all attachments. In between it is only folded with each reported
// vector, which keeps it a safe lower bound (see syncedVV).
const minVVRefresh = 50 * time.Millisecond

// syncedVV returns the minimum synced version vector of the document: for
// every actor known to any attached client, the smallest lamport all attached
// clients have reported, an actor missing from a client's vector counting as
// 0. Clients use it to collect tombstones and drop the actors missing from it
// from their own vectors, so it must never be above the true minimum and never
// lack an actor that an attached client reported.
//
// Recomputing it costs clients x actors, so between refreshes the cached value
// is folded with the vector just reported: element-wise minimum, with 0 for an
// actor on one side only. Folding only lowers values and only adds actors, so
// the result stays a lower bound over a superset of actors even as clients
// come and go; the periodic refresh lets it rise again. The returned map is
// shared and must not be mutated.
func (ds *docState) syncedVV(reported map[string]int64, now time.Time) map[string]int64 {
	if !ds.minRoot || now.Sub(ds.minAt) >= minVVRefresh {
		ds.minVV = ds.computeMinVV()
		ds.minAt, ds.minRoot = now, true
		return ds.minVV
	}
	ds.minVV = foldMin(ds.minVV, reported)
	return ds.minVV
}

// computeMinVV computes the minimum over every attached client's vector.
func (ds *docState) computeMinVV() map[string]int64 {
	out := make(map[string]int64)
	first := true
	for _, e := range ds.atts {
		vv := e.att.VersionVector
		if first {
			for k, v := range vv {
				out[k] = v
			}
			first = false
			continue
		}
		for k, v := range out {
			if w, ok := vv[k]; !ok {
				out[k] = 0
			} else if w < v {
				out[k] = w
			}
		}
		for k := range vv {
			if _, ok := out[k]; !ok {
				out[k] = 0
			}
		}
	}
	return out
}

// foldMin returns the element-wise minimum of cur and vv, an actor present on
// one side only getting 0. It returns cur itself when nothing changes and a
// new map otherwise, never mutating cur.
func foldMin(cur, vv map[string]int64) map[string]int64 {
	changed := false
	for k, v := range cur {
		if w, ok := vv[k]; (!ok && v != 0) || (ok && w < v) {
			changed = true
			break
		}
	}
	if !changed {
		for k := range vv {
			if _, ok := cur[k]; !ok {
				changed = true
				break
			}
		}
	}
	if !changed {
		return cur
	}
	out := make(map[string]int64, len(cur)+len(vv))
	for k, v := range cur {
		if w, ok := vv[k]; !ok {
			out[k] = 0
		} else {
			out[k] = min(v, w)
		}
	}
	for k := range vv {
		if _, ok := cur[k]; !ok {
			out[k] = 0
		}
	}
	return out
}
