package backend

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/smallmap"
)

// bruteMin is the definition of the minimum synced vector, computed from
// scratch.
func bruteMin(atts map[string]*attState) map[string]int64 {
	out := map[string]int64{}
	for _, e := range atts {
		for k := range e.att.VersionVector {
			out[k] = 0
		}
	}
	for k := range out {
		first := true
		for _, e := range atts {
			v := e.att.VersionVector[k]
			if first || v < out[k] {
				out[k] = v
			}
			first = false
		}
	}
	return out
}

// TestMinVectorFollowsEveryChange drives the incremental minimum through
// random joins, leaves and vector changes (values rising, falling, actors
// appearing and vanishing) and compares it after each step with the
// definition, with few actors and with more than a slice holds.
func TestMinVectorFollowsEveryChange(t *testing.T) {
	for seed := range uint64(50) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			atts := map[string]*attState{}
			var m minVector
			m.reset(atts)
			actors := []string{"a", "b", "c", "d", "e"}
			wentLarge := false
			if seed%2 == 1 {
				for i := range smallmap.Small {
					actors = append(actors, fmt.Sprint("x", i))
				}
			}
			var known smallmap.Set
			for _, k := range actors {
				known.Add(k)
			}
			for step := range 400 {
				ids := make([]string, 0, len(atts))
				for id := range atts {
					ids = append(ids, id)
				}
				switch op := rng.IntN(10); {
				case op == 0 || len(ids) == 0:
					id := fmt.Sprint("client-", step)
					atts[id] = &attState{}
					m.join()
				case op == 1:
					id := ids[rng.IntN(len(ids))]
					vv := atts[id].att.VersionVector
					delete(atts, id)
					m.leave(vv, atts)
				case op == 2:
					// A reload starts from the attachments as they are.
					m.reset(atts)
				default:
					e := atts[ids[rng.IntN(len(ids))]]
					next := maps.Clone(e.att.VersionVector)
					if next == nil {
						next = map[string]int64{}
					}
					for range rng.IntN(3) + 1 {
						k := actors[rng.IntN(len(actors))]
						if rng.IntN(6) == 0 {
							delete(next, k)
						} else {
							next[k] = max(0, next[k]+int64(rng.IntN(5))-1)
						}
					}
					old := e.att.VersionVector
					bad := rng.IntN(8) == 0
					if bad {
						next["unknown"] = 1
					}
					ds := &docState{atts: atts, known: known, synced: m}
					changed, err := ds.reportVector(e, next)
					m = ds.synced
					switch {
					case bad && (err == nil || !maps.Equal(e.att.VersionVector, old)):
						t.Fatalf("step %d: a vector naming an unknown actor: %v, vector now %v", step, err, e.att.VersionVector)
					case !bad && err != nil:
						t.Fatalf("step %d: %v", step, err)
					case !bad && changed == maps.Equal(old, next):
						t.Fatalf("step %d: update of %v to %v reported changed=%v", step, old, next, changed)
					}
				}
				want := bruteMin(atts)
				var own map[string]int64
				if len(ids) > 0 {
					if e := atts[ids[0]]; e != nil {
						own = e.att.VersionVector
					}
				}
				if got := m.vector(own); !maps.Equal(got, want) {
					t.Fatalf("step %d: minimum %v, want %v", step, got, want)
				}
				for k, a := range m.actors.All() {
					at, holders := 0, 0
					for _, e := range atts {
						v, ok := e.att.VersionVector[k]
						if v == a.min {
							at++
						}
						if ok {
							holders++
						}
					}
					if a.atMin != at || a.holders != holders {
						t.Fatalf("step %d: actor %s counts %d at minimum and %d holders, want %d and %d",
							step, k, a.atMin, a.holders, at, holders)
					}
				}
				wentLarge = wentLarge || m.actors.Len() > smallmap.Small
			}
			require.Equal(t, seed%2 == 1, wentLarge, "the minimum held more actors than a slice does")
		})
	}
}
