package backend

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/smallmap"
)

// initialActorKey is the wire key of the all-zero actor that made a new
// document's initial state; SDK vectors may name it.
const initialActorKey = "AAAAAAAAAAAAAAAA"

// ErrInvalidVersionVector: a pushed vector names an actor the document does
// not know. It is an ErrInvalidChangePack, so it maps to invalid_argument.
var ErrInvalidVersionVector = fmt.Errorf("version vector names an unknown actor: %w", ErrInvalidChangePack)

// actorKey returns the wire key of a client's actor in version vectors: the
// standard base64 of the ID's bytes.
func actorKey(clientID string) (string, error) {
	b, err := hex.DecodeString(clientID)
	if err != nil {
		return "", fmt.Errorf("client ID %q is not hex: %w", clientID, ErrInvalidChangePack)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// checkChangeVectors checks the vectors of the pack's changes.
func (ds *docState) checkChangeVectors(pack *api.ChangePack) error {
	for _, c := range pack.Changes {
		if err := ds.checkVector(c.GetId().GetVersionVector().GetVector()); err != nil {
			return fmt.Errorf("change %d: %w", c.GetId().GetClientSeq(), err)
		}
	}
	return nil
}

// checkVector refuses a vector naming an actor outside ds.known: an unknown
// actor in a pack's vector would stay in the minimum synced vector, and so in
// every answer to every client, for as long as the sender is attached; in a
// change's vector it would be stored and sent to every client pulling it.
func (ds *docState) checkVector(vv map[string]int64) error {
	if len(vv) > ds.known.Len() {
		return fmt.Errorf("%d actors, the document knows %d: %w", len(vv), ds.known.Len(), ErrInvalidVersionVector)
	}
	for k := range vv {
		if !ds.known.Has(k) {
			return fmt.Errorf("actor %q: %w", truncate(k), ErrInvalidVersionVector)
		}
	}
	return nil
}

// truncate shortens a rejected value before it goes into an error message.
func truncate(s string) string {
	const limit = 40
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// minVector maintains the minimum synced version vector of a document: for
// every actor named by an attached client's last reported vector, the
// smallest lamport over all attached clients, an actor missing from a
// client's vector counting as 0. Clients purge the tombstones it covers, so
// every answer carries it exact: the value right after the requester's vector
// was recorded.
//
// Each actor keeps its minimum and how many clients sit at it, so a vector
// change costs its own entries; the minimum of an actor is recomputed over
// the clients only when the last client at it moves up. The caller holds the
// document's lock and keeps the attachments' vectors current before calling.
type minVector struct {
	actors smallmap.Map[actorMin]
	// clients is the number of attached clients counted.
	clients int
	// snap is the vector as answers carry it, shared by them and never
	// mutated; nil when a minimum changed since it was built.
	snap map[string]int64
}

// actorMin is one actor's entry of the minimum.
type actorMin struct {
	min int64
	// atMin counts the clients whose value (0 when missing) is min.
	atMin int
	// holders counts the clients whose vector names the actor; the actor
	// leaves the minimum when none does.
	holders int
}

// reset rebuilds the minimum over the attachments.
func (m *minVector) reset(atts map[string]*attState) {
	m.actors = smallmap.Map[actorMin]{}
	m.clients = len(atts)
	m.snap = nil
	for _, e := range atts {
		for k := range e.att.VersionVector {
			a := m.actors.Get(k)
			if a == nil {
				a = m.actors.Add(k, actorMin{})
			}
			a.holders++
		}
	}
	for k, a := range m.actors.All() {
		a.min, a.atMin = minOver(atts, k)
	}
}

// minOver returns the smallest value of actor k over the attachments and how
// many have it.
func minOver(atts map[string]*attState, k string) (int64, int) {
	var lo int64
	n := 0
	for _, e := range atts {
		v := e.att.VersionVector[k]
		switch {
		case n == 0 || v < lo:
			lo, n = v, 1
		case v == lo:
			n++
		}
	}
	return lo, n
}

// join counts a newly attached client whose vector is still empty.
func (m *minVector) join() {
	m.clients++
	for _, a := range m.actors.All() {
		switch {
		case a.min > 0:
			a.min, a.atMin = 0, 1
			m.snap = nil
		case a.min == 0:
			a.atMin++
		}
	}
}

// leave uncounts a client that left with vector vv; atts no longer holds it.
func (m *minVector) leave(vv map[string]int64, atts map[string]*attState) {
	m.clients--
	for k, a := range m.actors.All() {
		v, named := vv[k]
		if named {
			a.holders--
			if a.holders == 0 {
				m.actors.Delete(k)
				m.snap = nil
				continue
			}
		}
		if v == a.min {
			a.atMin--
			if a.atMin == 0 {
				m.recompute(k, a, atts)
			}
		}
	}
}

// update follows one client's vector from old to cur, reporting whether it
// changed; atts already holds cur. An actor of cur missing from old must be
// in known (old was checked when it came): otherwise update stops and
// returns it, leaving the minimum to be rebuilt.
func (m *minVector) update(old, cur map[string]int64, atts map[string]*attState, known *smallmap.Set) (changed bool, unknown string) {
	kept := 0
	for k, v := range cur {
		w, ok := old[k]
		if ok {
			kept++
		} else if !known.Has(k) {
			return false, k
		}
		if !ok || w != v {
			changed = true
			m.move(k, w, v, ok, true, atts)
		}
	}
	if kept < len(old) {
		changed = true
		for k, v := range old {
			if _, ok := cur[k]; !ok {
				m.move(k, v, 0, true, false, atts)
			}
		}
	}
	return changed, ""
}

// move follows one client's value of actor k from prev to next, and whether
// its vector names k before and after.
func (m *minVector) move(k string, prev, next int64, before, after bool, atts map[string]*attState) {
	a := m.actors.Get(k)
	if a == nil {
		// No client named k, so every client, this one included, had 0.
		a = m.actors.Add(k, actorMin{atMin: m.clients})
		m.snap = nil
	}
	if before {
		a.holders--
	}
	if after {
		a.holders++
	}
	if a.holders == 0 {
		m.actors.Delete(k)
		m.snap = nil
		return
	}
	if prev == next {
		return
	}
	if m.clients == 1 {
		a.min, a.atMin = next, 1
		m.snap = nil
		return
	}
	switch lo := a.min; {
	case next < lo:
		a.min, a.atMin = next, 1
		m.snap = nil
	case next == lo:
		a.atMin++
	case prev == lo:
		a.atMin--
		if a.atMin == 0 {
			m.recompute(k, a, atts)
		}
	}
}

func (m *minVector) recompute(k string, a *actorMin, atts map[string]*attState) {
	lo, n := minOver(atts, k)
	if lo != a.min {
		m.snap = nil
	}
	a.min, a.atMin = lo, n
}

// vector returns the minimum as answers carry it; own is the requester's
// vector. When the two are equal, own (immutable) serves, saving a copy: the
// common case of a client alone or in step with the others.
func (m *minVector) vector(own map[string]int64) map[string]int64 {
	if m.snap != nil {
		return m.snap
	}
	if own != nil && (m.clients == 1 || m.equals(own)) {
		m.snap = own
		return own
	}
	out := make(map[string]int64, m.actors.Len())
	for k, a := range m.actors.All() {
		out[k] = a.min
	}
	m.snap = out
	return out
}

func (m *minVector) equals(vv map[string]int64) bool {
	if vv == nil || len(vv) != m.actors.Len() {
		return false
	}
	for k, a := range m.actors.All() {
		if v, ok := vv[k]; !ok || v != a.min {
			return false
		}
	}
	return true
}
