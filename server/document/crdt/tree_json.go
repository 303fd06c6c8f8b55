package crdt

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The SDK writes a tree as JSON.stringify of {type, children, attributes} objects, whose
// attribute values are JSON.parse of the stored strings. This file reproduces that: JS string
// escaping, JS number formatting and JS object key order (integer keys first, ascending).

// JSON implements Element: the tree as the SDK's toSortedJSON (= toJSON) writes it.
func (t *Tree) JSON(b []byte) []byte { return appendTreeNodeJSON(b, t.root) }

func appendTreeNodeJSON(b []byte, n *TreeNode) []byte {
	b = append(b, `{"type":`...)
	b = appendJSStringUTF8(b, n.typ)
	if n.IsText() {
		b = append(b, `,"value":`...)
		b = appendJSStringUTF16(b, n.text)
		return append(b, '}')
	}
	b = append(b, `,"children":[`...)
	first := true
	for _, c := range n.children {
		if c.removed {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendTreeNodeJSON(b, c)
	}
	b = append(b, ']')
	if n.attrs != nil {
		b = append(b, `,"attributes":`...)
		b = appendAttrsJSON(b, n.attrs)
	}
	return append(b, '}')
}

func appendAttrsJSON(b []byte, attrs *treeAttrs) []byte {
	live := make([]*treeAttr, 0, len(attrs.nodes))
	for _, a := range attrs.nodes {
		// Assigning "__proto__" on a plain JS object sets its prototype: the key never shows.
		if !a.removed && a.key != "__proto__" {
			live = append(live, a)
		}
	}
	orderJSKeys(len(live), func(i int) string { return live[i].key }, func(i, j int) {
		live[i], live[j] = live[j], live[i]
	})
	b = append(b, '{')
	for i, a := range live {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSStringUTF8(b, a.key)
		b = append(b, ':')
		if v, ok := parseJS(a.value); ok {
			b = v.appendJSON(b)
		} else {
			// The SDK would throw; values are checked on the way in, so this is a fallback.
			b = appendJSStringUTF8(b, a.value)
		}
	}
	return append(b, '}')
}

// ValidTreeAttrValue reports whether s is JSON that JSON.parse accepts, as attribute values
// must be for the SDK to print the tree.
func ValidTreeAttrValue(s string) bool {
	_, ok := parseJS(s)
	return ok
}

// OrderTreeAttrKeys sorts keys into the order a JS object built from them iterates: integer
// keys ascending first, then the others (whose original order the wire's maps do not keep;
// they are sorted so that replicas agree).
func OrderTreeAttrKeys(keys []string) {
	sort.Strings(keys)
	orderJSKeys(len(keys), func(i int) string { return keys[i] }, func(i, j int) {
		keys[i], keys[j] = keys[j], keys[i]
	})
}

// OrderJSObjectKeys stably moves integer keys first, in numeric order, as a JS object
// iterates keys set in the given order.
func OrderJSObjectKeys(keys []string) {
	orderJSKeys(len(keys), func(i int) string { return keys[i] }, func(i, j int) {
		keys[i], keys[j] = keys[j], keys[i]
	})
}

// orderJSKeys stably moves array-index keys first, in numeric order, keeping the rest in
// place order.
func orderJSKeys(n int, key func(int) string, swap func(i, j int)) {
	idx := make([]int64, n)
	anyIndex := false
	for i := 0; i < n; i++ {
		idx[i] = jsArrayIndex(key(i))
		if idx[i] >= 0 {
			anyIndex = true
		}
	}
	if !anyIndex {
		return
	}
	// insertion sort: few keys, stable
	for i := 1; i < n; i++ {
		for j := i; j > 0 && jsKeyLess(idx[j], idx[j-1]); j-- {
			swap(j, j-1)
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

func jsKeyLess(a, b int64) bool {
	switch {
	case a >= 0 && b >= 0:
		return a < b
	case a >= 0:
		return true
	}
	return false
}

// jsArrayIndex is the value of a canonical array-index key ("0".."4294967294"), else -1.
func jsArrayIndex(k string) int64 {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return -1
	}
	var v int64
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int64(c-'0')
	}
	if v > 4294967294 {
		return -1
	}
	return v
}

func jsArrayIndex16(k []uint16) int64 {
	if len(k) > 10 {
		return -1
	}
	var sb strings.Builder
	for _, c := range k {
		if c > 0x7f {
			return -1
		}
		sb.WriteByte(byte(c))
	}
	return jsArrayIndex(sb.String())
}

const hexDigits = "0123456789abcdef"

// appendJSEscape writes one UTF-16 code unit (not part of a pair) as JSON.stringify does.
func appendJSEscape(b []byte, c rune) []byte {
	switch c {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	if c < 0x20 || (c >= 0xd800 && c <= 0xdfff) {
		return append(b, '\\', 'u', hexDigits[c>>12&0xf], hexDigits[c>>8&0xf], hexDigits[c>>4&0xf], hexDigits[c&0xf])
	}
	return utf8.AppendRune(b, c)
}

// appendJSStringUTF16 writes s quoted as JSON.stringify does: lone surrogates as \uXXXX.
func appendJSStringUTF16(b []byte, s []uint16) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := rune(s[i])
		if utf16.IsSurrogate(c) && c < 0xdc00 && i+1 < len(s) {
			if r := utf16.DecodeRune(c, rune(s[i+1])); r != utf8.RuneError {
				b = utf8.AppendRune(b, r)
				i++
				continue
			}
		}
		b = appendJSEscape(b, c)
	}
	return append(b, '"')
}

// appendJSStringUTF8 writes a valid UTF-8 string quoted as JSON.stringify does.
func appendJSStringUTF8(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		if r >= 0x80 {
			b = utf8.AppendRune(b, r)
			continue
		}
		b = appendJSEscape(b, r)
	}
	return append(b, '"')
}

// jsValue is a value JSON.parse produced.
type jsValue struct {
	kind byte // 'n' null, 't' true, 'f' false, '0' number, 's' string, 'a' array, 'o' object
	num  float64
	str  []uint16
	arr  []*jsValue
	keys [][]uint16
	vals []*jsValue
}

func (v *jsValue) appendJSON(b []byte) []byte {
	switch v.kind {
	case 'n':
		return append(b, "null"...)
	case 't':
		return append(b, "true"...)
	case 'f':
		return append(b, "false"...)
	case '0':
		// JSON.stringify writes what is not finite (a parsed 1e400) as null.
		if math.IsInf(v.num, 0) {
			return append(b, "null"...)
		}
		return appendJSNumber(b, v.num)
	case 's':
		return appendJSStringUTF16(b, v.str)
	case 'a':
		b = append(b, '[')
		for i, e := range v.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.appendJSON(b)
		}
		return append(b, ']')
	}
	order := make([]int, len(v.keys))
	for i := range order {
		order[i] = i
	}
	idx := make([]int64, len(v.keys))
	for i, k := range v.keys {
		idx[i] = jsArrayIndex16(k)
	}
	sort.SliceStable(order, func(i, j int) bool { return jsKeyLess(idx[order[i]], idx[order[j]]) })
	b = append(b, '{')
	for i, o := range order {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSStringUTF16(b, v.keys[o])
		b = append(b, ':')
		b = v.vals[o].appendJSON(b)
	}
	return append(b, '}')
}

// parseJS parses s as JSON.parse does; ok is false where JSON.parse would throw.
func parseJS(s string) (*jsValue, bool) {
	p := jsParser{s: s}
	p.ws()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.ws()
	return v, p.i == len(s)
}

type jsParser struct {
	s string
	i int
}

// jsMaxDepth bounds nesting, as the JS engine's stack does.
const jsMaxDepth = 1000

// next steps over what follows an element of a container: a comma (more is
// true) or the container's closing byte. ok is false for anything else.
func (p *jsParser) next(closing byte) (more, ok bool) {
	p.ws()
	if p.i >= len(p.s) {
		return false, false
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

func (p *jsParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *jsParser) value(depth int) (*jsValue, bool) {
	if p.i >= len(p.s) || depth > jsMaxDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == 'n':
		return &jsValue{kind: 'n'}, p.lit("null")
	case c == 't':
		return &jsValue{kind: 't'}, p.lit("true")
	case c == 'f':
		return &jsValue{kind: 'f'}, p.lit("false")
	case c == '"':
		str, ok := p.str()
		return &jsValue{kind: 's', str: str}, ok
	case c == '[':
		p.i++
		v := &jsValue{kind: 'a'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return v, true
		}
		for {
			p.ws()
			e, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			v.arr = append(v.arr, e)
			more, ok := p.next(']')
			if !ok {
				return nil, false
			}
			if !more {
				return v, true
			}
		}
	case c == '{':
		p.i++
		v := &jsValue{kind: 'o'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return v, true
		}
		for {
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, false
			}
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.ws()
			e, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			v.setKey(k, e)
			more, ok := p.next('}')
			if !ok {
				return nil, false
			}
			if !more {
				return v, true
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, false
}

// setKey defines a property: a repeated key keeps its first place and takes the last value.
func (v *jsValue) setKey(k []uint16, e *jsValue) {
	for i, x := range v.keys {
		if equalUnits(x, k) {
			v.vals[i] = e
			return
		}
	}
	v.keys = append(v.keys, k)
	v.vals = append(v.vals, e)
}

func equalUnits(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (p *jsParser) number() (*jsValue, bool) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i >= len(p.s) {
		return nil, false
	}
	if p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, false
	}
	return &jsValue{kind: '0', num: f}, true
}

func hexVal(c byte) (rune, bool) {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0'), true
	case c >= 'a' && c <= 'f':
		return rune(c-'a') + 10, true
	case c >= 'A' && c <= 'F':
		return rune(c-'A') + 10, true
	}
	return 0, false
}

func (p *jsParser) str() ([]uint16, bool) {
	p.i++ // opening quote
	var out []uint16
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return out, true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return nil, false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, uint16(e))
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				if p.i+4 > len(p.s) {
					return nil, false
				}
				var r rune
				for j := 0; j < 4; j++ {
					h, ok := hexVal(p.s[p.i+j])
					if !ok {
						return nil, false
					}
					r = r<<4 | h
				}
				p.i += 4
				out = append(out, uint16(r))
			default:
				return nil, false
			}
		case c < utf8.RuneSelf:
			out = append(out, uint16(c))
			p.i++
		default:
			r, n := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += n
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				out = append(out, uint16(r1), uint16(r2))
			} else {
				out = append(out, uint16(r))
			}
		}
	}
	return nil, false
}
