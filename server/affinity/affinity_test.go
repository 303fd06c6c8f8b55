package affinity

import (
	"fmt"
	"strings"
	"testing"
)

func TestSessionKeyRoundTrip(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:8080", "yorkie-2.yorkie.svc:11101", "[::1]:9000"} {
		key := SessionKey(addr)
		got, err := ParseSessionKey(key)
		if err != nil || got != addr {
			t.Fatalf("ParseSessionKey(SessionKey(%q)) = %q, %v", addr, got, err)
		}
	}
	// Envoy's encoding of 127.0.0.1:8080 is plain padded standard base64.
	if k := SessionKey("127.0.0.1:8080"); k != "MTI3LjAuMC4xOjgwODA=" {
		t.Fatalf("SessionKey = %q", k)
	}
}

func TestParseSessionKeyRejectsMalformed(t *testing.T) {
	for _, key := range []string{
		"", "%%%", "MTI3LjAuMC4xOjgwODA", // unpadded
		SessionKey("no-port"), SessionKey(":8080"), SessionKey("h:0"), SessionKey("h:99999"), SessionKey("h:http"),
		strings.Repeat("A", 1024),
	} {
		if addr, err := ParseSessionKey(key); err == nil {
			t.Errorf("ParseSessionKey(%q) = %q, want an error", key, addr)
		}
	}
}

func FuzzParseSessionKey(f *testing.F) {
	f.Add(SessionKey("127.0.0.1:8080"))
	f.Add("not base64")
	f.Fuzz(func(t *testing.T, key string) {
		addr, err := ParseSessionKey(key)
		if err != nil {
			return
		}
		// Whatever parses names a host:port that encodes back to the same key.
		if SessionKey(addr) != key {
			t.Fatalf("%q parsed to %q, which encodes to %q", key, addr, SessionKey(addr))
		}
	})
}

func members(n int) []string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = fmt.Sprintf("10.0.0.%d:8080", i+1)
	}
	return ms
}

// placeAll places keys one by one, counting loads as a cluster would.
func placeAll(r *Ring, keys []string) (map[string]string, map[string]int) {
	owner := make(map[string]string, len(keys))
	loads := map[string]int{}
	for _, k := range keys {
		m := r.Place(k, loads)
		owner[k] = m
		loads[m]++
	}
	return owner, loads
}

func TestRingBoundsLoads(t *testing.T) {
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("project/doc-%d", i)
	}
	for _, n := range []int{1, 3, 5, 16} {
		_, loads := placeAll(NewRing(members(n), 0), keys)
		mean := float64(len(keys)) / float64(n)
		for m, l := range loads {
			if float64(l) > DefaultLoadFactor*mean+1 {
				t.Errorf("n=%d: %s holds %d documents, above %.2f x mean %.1f", n, m, l, DefaultLoadFactor, mean)
			}
		}
	}
}

func TestRingMovesFewKeysOnMembershipChange(t *testing.T) {
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = fmt.Sprintf("project/doc-%d", i)
	}
	before := NewRing(members(4), 0)
	after := NewRing(members(5), 0) // one node joins
	moved := 0
	for _, k := range keys {
		// Without load pressure (empty loads) placement is the plain ring walk.
		if before.Place(k, nil) != after.Place(k, nil) {
			moved++
		}
	}
	// Ideal is 1/5 of the keys; allow for the ring's unevenness.
	if frac := float64(moved) / float64(len(keys)); frac > 0.3 {
		t.Fatalf("a join moved %.0f%% of the keys, want about 20%%", frac*100)
	}
	// Keys that moved went to the new member only.
	for _, k := range keys {
		if b, a := before.Place(k, nil), after.Place(k, nil); b != a && a != "10.0.0.5:8080" {
			t.Fatalf("%s moved from %s to %s, not to the new member", k, b, a)
		}
	}
}

func TestRingEmptyAndDeterministic(t *testing.T) {
	if got := NewRing(nil, 0).Place("k", nil); got != "" {
		t.Fatalf("empty ring placed on %q", got)
	}
	a := NewRing([]string{"b:1", "a:1", "c:1"}, 0)
	b := NewRing([]string{"c:1", "a:1", "b:1", "a:1"}, 0)
	for i := 0; i < 100; i++ {
		k := fmt.Sprint(i)
		if a.Place(k, nil) != b.Place(k, nil) {
			t.Fatalf("placement depends on member order for %s", k)
		}
	}
}

func BenchmarkRingPlace(b *testing.B) {
	r := NewRing(members(5), 0)
	loads := map[string]int{}
	for i := 0; i < b.N; i++ {
		r.Place(fmt.Sprintf("doc-%d", i&1023), loads)
	}
}
