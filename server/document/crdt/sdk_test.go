package crdt

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// sdkCases are the answers of JavaScript and the real SDK, recorded by testdata/generate.js.
type sdkCases struct {
	Numbers []struct {
		Bits  string `json:"bits"`
		Str   string `json:"str"`
		Int32 int32  `json:"int32"`
	} `json:"numbers"`
	Strings []struct {
		Hex  string `json:"hex"`
		JSON string `json:"json"`
		Len  int    `json:"len"`
	} `json:"strings"`
	SortedKeys []string `json:"sortedKeys"`
	UTF8       []struct {
		In  string `json:"in"`
		Out string `json:"out"`
	} `json:"utf8"`
	Dates []struct {
		Ms  float64 `json:"ms"`
		ISO string  `json:"iso"`
	} `json:"dates"`
	Dedup struct {
		Actors    []string  `json:"actors"`
		Counts    []float64 `json:"counts"`
		Registers string    `json:"registers"`
	} `json:"dedup"`
}

func loadSDKCases(t *testing.T) sdkCases {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c sdkCases
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNumbersPrintAsJavaScript checks number printing and ToInt32 against JavaScript's own
// answers for special values and random bit patterns.
func TestNumbersPrintAsJavaScript(t *testing.T) {
	for _, c := range loadSDKCases(t).Numbers {
		f := math.Float64frombits(binary.BigEndian.Uint64(unhex(t, c.Bits)))
		if got := string(appendJSNumber(nil, f)); got != c.Str {
			t.Errorf("%v (%s): printed %q, JavaScript prints %q", f, c.Bits, got, c.Str)
		}
		if got := toInt32(f); got != c.Int32 {
			t.Errorf("%v: ToInt32 %d, JavaScript %d", f, got, c.Int32)
		}
	}
}

// TestStringsEscapeAsSDK checks string values' JSON and sizes against the SDK's.
func TestStringsEscapeAsSDK(t *testing.T) {
	for _, c := range loadSDKCases(t).Strings {
		p, err := NewPrimitive(PrimitiveString, unhex(t, c.Hex), Ticket{Lamport: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := string(unhex(t, c.JSON))
		if got := string(p.JSON(nil)); got != want {
			t.Errorf("%q: JSON %q, SDK %q", unhex(t, c.Hex), got, want)
		}
		if got := p.DataSize().Data; got != 2*c.Len {
			t.Errorf("%q: data size %d, SDK %d", unhex(t, c.Hex), got, 2*c.Len)
		}
	}
}

// TestKeysSortAsJavaScript checks that object keys sort by UTF-16 code units.
func TestKeysSortAsJavaScript(t *testing.T) {
	c := loadSDKCases(t)
	var keys []string
	for _, k := range c.SortedKeys {
		keys = append(keys, string(unhex(t, k)))
	}
	got := append([]string{}, keys...)
	// Start from byte order, which differs for keys past U+FFFF.
	sort.Strings(got)
	sort.SliceStable(got, func(i, j int) bool { return lessUTF16(got[i], got[j]) })
	for i := range keys {
		if got[i] != keys[i] {
			t.Fatalf("position %d: %q, JavaScript sorts %q there", i, got[i], keys[i])
		}
	}
}

// TestStringsDecodeAsTextDecoder checks UTF-8 decoding of arbitrary bytes against
// TextDecoder's: replacement characters, and the byte order mark dropped.
func TestStringsDecodeAsTextDecoder(t *testing.T) {
	for _, c := range loadSDKCases(t).UTF8 {
		if got := decodeUTF8(unhex(t, c.In)); got != string(unhex(t, c.Out)) {
			t.Errorf("%s: decoded %x, TextDecoder %s", c.In, got, c.Out)
		}
	}
}

// TestDatesPrintAsJavaScript checks date values' JSON against toISOString.
func TestDatesPrintAsJavaScript(t *testing.T) {
	for _, c := range loadSDKCases(t).Dates {
		v := binary.LittleEndian.AppendUint64(nil, uint64(c.Ms))
		p, err := NewPrimitive(PrimitiveDate, v, Ticket{Lamport: 1})
		if err != nil {
			t.Fatalf("%v: %v", c.Ms, err)
		}
		if got := string(p.JSON(nil)); got != `"`+c.ISO+`"` {
			t.Errorf("%v: %s, JavaScript %q", c.Ms, got, c.ISO)
		}
	}
}

// TestDedupCounterCountsAsSDK adds the SDK's actors one by one to a dedup counter and checks
// the value after each and the registers at the end.
func TestDedupCounterCountsAsSDK(t *testing.T) {
	d := loadSDKCases(t).Dedup
	c, err := NewCounter(CounterIntDedup, nil, Ticket{Lamport: 1})
	if err != nil {
		t.Fatal(err)
	}
	one, _ := NewPrimitive(PrimitiveInteger, []byte{1, 0, 0, 0}, Ticket{Lamport: 2})
	for i, a := range d.Actors {
		if err := c.IncreaseDedup(one, a); err != nil {
			t.Fatal(err)
		}
		if c.num != d.Counts[i] {
			t.Fatalf("after %d actors (%q): %v, SDK %v", i+1, a, c.num, d.Counts[i])
		}
	}
	if hex.EncodeToString(c.HLLRegisters()) != d.Registers {
		t.Error("registers differ from the SDK's")
	}
	r, _ := NewCounter(CounterIntDedup, nil, Ticket{Lamport: 1})
	if err := r.RestoreHLL(unhex(t, d.Registers)); err != nil {
		t.Fatal(err)
	}
	if r.num != d.Counts[len(d.Counts)-1] {
		t.Errorf("restored count %v, SDK %v", r.num, d.Counts[len(d.Counts)-1])
	}
}
