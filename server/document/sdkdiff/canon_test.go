package sdkdiff_test

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
)

// The order of a tree element's attributes is not compared. The SDK prints them in the
// order they reached the replica, which for a remote replica is the wire order of a
// protobuf map (TreeStyle and TreeNode attributes); Go's protobuf maps do not keep that
// order, so the server prints integer keys first, then the others sorted, as upstream's Go
// server does (testdata/tree-attrs-min.jsonl). canonicalAttrs sorts the members of those
// objects only; every other byte of the document is compared as it is.

// canonicalAttrs returns doc with the members of every tree element's "attributes" object
// sorted by key. A tree element is an object with a string "type", an array "children"
// and an object "attributes"; the generator never makes such an object by other means.
// A document that does not parse (or has whitespace between tokens) is returned unchanged,
// so that it is compared byte by byte.
func canonicalAttrs(doc string) string {
	c := canonicalizer{s: doc}
	out, err := c.value()
	if err != nil || c.i < len(doc) {
		return doc
	}
	return out
}

var errSyntax = errors.New("not JSON")

// canonicalizer walks a JSON text, copying it through except for the objects it reorders.
type canonicalizer struct {
	s string
	i int
}

// member is one member of an object: its key as written and decoded, and its value
// (already canonical) as written.
type member struct {
	rawKey, key, value string
}

// more tells whether text remains. The documents compared have no whitespace between
// tokens: whitespace is a syntax error here, so that the document is compared as written.
func (c *canonicalizer) more() bool {
	return c.i < len(c.s)
}

// value reads one value and returns its canonical text.
func (c *canonicalizer) value() (string, error) {
	if !c.more() {
		return "", errSyntax
	}
	switch c.s[c.i] {
	case '{':
		members, err := c.object()
		if err != nil {
			return "", err
		}
		return joinObject(treeElementAttrsSorted(members)), nil
	case '[':
		return c.array()
	case '"':
		return c.str()
	default:
		// A number, true, false or null: up to the next delimiter, as written.
		start := c.i
		for c.i < len(c.s) && strings.IndexByte(",]}", c.s[c.i]) < 0 {
			c.i++
		}
		if c.i == start {
			return "", errSyntax
		}
		return c.s[start:c.i], nil
	}
}

func (c *canonicalizer) str() (string, error) {
	start := c.i
	c.i++
	for c.i < len(c.s) {
		switch c.s[c.i] {
		case '\\':
			c.i += 2
		case '"':
			c.i++
			return c.s[start:c.i], nil
		default:
			c.i++
		}
	}
	return "", errSyntax
}

func (c *canonicalizer) array() (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	c.i++
	if c.more() && c.s[c.i] == ']' {
		c.i++
		return "[]", nil
	}
	for {
		v, err := c.value()
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		if !c.more() {
			return "", errSyntax
		}
		switch c.s[c.i] {
		case ',':
			b.WriteByte(',')
			c.i++
		case ']':
			b.WriteByte(']')
			c.i++
			return b.String(), nil
		default:
			return "", errSyntax
		}
	}
}

func (c *canonicalizer) object() ([]member, error) {
	c.i++
	var members []member
	if c.more() && c.s[c.i] == '}' {
		c.i++
		return members, nil
	}
	for {
		if !c.more() || c.s[c.i] != '"' {
			return nil, errSyntax
		}
		rawKey, err := c.str()
		if err != nil {
			return nil, err
		}
		var key string
		if err := json.Unmarshal([]byte(rawKey), &key); err != nil {
			return nil, errSyntax
		}
		if !c.more() || c.s[c.i] != ':' {
			return nil, errSyntax
		}
		c.i++
		v, err := c.value()
		if err != nil {
			return nil, err
		}
		members = append(members, member{rawKey: rawKey, key: key, value: v})
		if !c.more() {
			return nil, errSyntax
		}
		switch c.s[c.i] {
		case ',':
			c.i++
		case '}':
			c.i++
			return members, nil
		default:
			return nil, errSyntax
		}
	}
}

// treeElementAttrsSorted sorts the attributes of members when they are a tree element's.
func treeElementAttrsSorted(members []member) []member {
	var isType, isChildren bool
	attrs := -1
	for i, m := range members {
		switch m.key {
		case "type":
			isType = strings.HasPrefix(m.value, `"`)
		case "children":
			isChildren = strings.HasPrefix(m.value, "[")
		case "attributes":
			if strings.HasPrefix(m.value, "{") {
				attrs = i
			}
		}
	}
	if !isType || !isChildren || attrs < 0 {
		return members
	}
	c := canonicalizer{s: members[attrs].value}
	inner, err := c.object()
	if err != nil {
		return members
	}
	sort.SliceStable(inner, func(a, b int) bool { return inner[a].key < inner[b].key })
	out := append([]member(nil), members...)
	out[attrs].value = joinObject(inner)
	return out
}

func joinObject(members []member) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.rawKey)
		b.WriteByte(':')
		b.WriteString(m.value)
	}
	b.WriteByte('}')
	return b.String()
}

// jsonMismatch compares our document with the SDK's, tree element attributes in any
// order, and describes the first difference ("" when they agree).
func jsonMismatch(ours, sdk string) string {
	if ours == sdk {
		return ""
	}
	co, cs := canonicalAttrs(ours), canonicalAttrs(sdk)
	if co == cs {
		return ""
	}
	return jsonDiff(co, cs)
}

func TestCanonicalAttrs(t *testing.T) {
	for _, c := range []struct{ ours, sdk string }{
		// Two orders of one tree element's attributes are the same document.
		{`{"t":{"type":"p","children":[],"attributes":{"align":"left","level":2}}}`,
			`{"t":{"type":"p","children":[],"attributes":{"level":2,"align":"left"}}}`},
		// Nested elements too, values kept as written.
		{`{"t":{"type":"doc","children":[{"type":"h","children":[{"type":"text","value":"a"}],"attributes":{"1":"x","id":{"b":1,"a":2}}}]}}`,
			`{"t":{"type":"doc","children":[{"type":"h","children":[{"type":"text","value":"a"}],"attributes":{"id":{"b":1,"a":2},"1":"x"}}]}}`},
	} {
		if d := jsonMismatch(c.ours, c.sdk); d != "" {
			t.Errorf("%s and %s differ: %s", c.ours, c.sdk, d)
		}
	}
	for _, c := range []struct{ ours, sdk string }{
		// Another attribute value, or the order inside an attribute's value.
		{`{"t":{"type":"p","children":[],"attributes":{"a":1,"b":2}}}`, `{"t":{"type":"p","children":[],"attributes":{"b":1,"a":2}}}`},
		{`{"t":{"type":"p","children":[],"attributes":{"a":{"x":1,"y":2}}}}`, `{"t":{"type":"p","children":[],"attributes":{"a":{"y":2,"x":1}}}}`},
		// An object that is not a tree element, or members outside the attributes.
		{`{"attributes":{"a":1,"b":2}}`, `{"attributes":{"b":2,"a":1}}`},
		{`{"t":{"type":"p","children":[],"attributes":{}},"a":1,"b":2}`, `{"t":{"type":"p","children":[],"attributes":{}},"b":2,"a":1}`},
		{`{"t":{"children":[],"type":"p","attributes":{}}}`, `{"t":{"type":"p","children":[],"attributes":{}}}`},
		// Text attributes ("attrs") keep their order; whitespace is compared as written.
		{`{"t":[{"attrs":{"a":1,"b":2},"val":"x"}]}`, `{"t":[{"attrs":{"b":2,"a":1},"val":"x"}]}`},
		{`{"t":{"type":"p","children":[],"attributes":{"a":1, "b":2}}}`, `{"t":{"type":"p","children":[],"attributes":{"b":2,"a":1}}}`},
	} {
		if jsonMismatch(c.ours, c.sdk) == "" {
			t.Errorf("%s and %s compare equal", c.ours, c.sdk)
		}
	}
}

func TestLoadsButUnencodable(t *testing.T) {
	for _, c := range []struct {
		doc, loaded string
		want        bool
	}{
		{`{"c":2737418136}`, `{"c":-1557549160}`, true},
		{`{"t":{"type":"doc","children":[{"type":"p","children":[],"attributes":{}}]}}`, `{"t":{"type":"doc","children":[{"type":"p","children":[]}]}}`, true},
		{`{"t":[{"attrs":{"link":[object Object]},"val":"a"}],"c":2147483648}`, `{"t":[{"attrs":{"link":[object Object]},"val":"a"}],"c":-2147483648}`, true},
		{"{\"s\":\"\x01ctl\",\"c\":2147483648}", "{\"s\":\"\x01ctl\",\"c\":-2147483648}", true},
		{`{"n":-Infinity,"m":NaN,"s":"NaN \"x\"","c":2147483648}`, `{"n":-Infinity,"m":NaN,"s":"NaN \"x\"","c":-2147483648}`, true},
		{`{"n":-Infinity}`, `{"n":Infinity}`, false},
		// Another order of an array, a lost attribute, a plain object's empty member, a
		// wrap of a number inside int32: all differences a snapshot can carry.
		{`{"l":["b","c","a","d"]}`, `{"l":["d","b","c","a"]}`, false},
		{`{"t":{"type":"p","children":[],"attributes":{"a":"1"}}}`, `{"t":{"type":"p","children":[]}}`, false},
		{`{"o":{"attributes":{}}}`, `{"o":{}}`, false},
		{`{"c":5}`, `{"c":6}`, false},
	} {
		if got := loadsButUnencodable(c.doc, c.loaded); got != c.want {
			t.Errorf("loadsButUnencodable(%s, %s) = %v, want %v", c.doc, c.loaded, got, c.want)
		}
	}
}
