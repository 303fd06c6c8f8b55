package yson

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// upstreamRoot is a root as upstream's YSON marshaller writes one.
const upstreamRoot = `{"b":BinData("AQI="),"c":Counter(Int(3)),"cl":Counter(Long(9)),"d":Date("2025-01-02T03:04:05.5Z"),` +
	`"f":1.5,"i":Int(-7),"l":Long(9007199254740993),"n":null,"o":{"arr":[1,"x",true,Int(2)]},"s":"Int(1) is text",` +
	`"t":Text([{"val":"ab"},{"val":"c","attrs":{"bold":"true"}}]),` +
	`"tr":Tree({"type":"doc","children":[{"type":"p","attrs":{"a":"1"},"children":[{"type":"text","value":"hi"}]}]}),` +
	`"et":Text(),"ee":Tree(),"yes":true,"no":false}`

func TestParseObject(t *testing.T) {
	obj, err := ParseObject(upstreamRoot)
	require.NoError(t, err)
	got := map[string]any{}
	for _, m := range obj {
		got[m.Key] = m.Value
	}
	assert.Equal(t, []byte{1, 2}, got["b"])
	assert.Equal(t, Counter{Value: 3}, got["c"])
	assert.Equal(t, Counter{Long: true, Value: 9}, got["cl"])
	assert.True(t, time.Date(2025, 1, 2, 3, 4, 5, 5e8, time.UTC).Equal(got["d"].(time.Time)))
	assert.Equal(t, 1.5, got["f"])
	assert.Equal(t, Int(-7), got["i"])
	assert.Equal(t, Long(9007199254740993), got["l"])
	assert.Nil(t, got["n"])
	assert.Equal(t, Object{{Key: "arr", Value: Array{1.0, "x", true, Int(2)}}}, got["o"])
	assert.Equal(t, "Int(1) is text", got["s"])
	assert.Equal(t, Text{{Value: "ab"}, {Value: "c", Attrs: map[string]string{"bold": "true"}}}, got["t"])
	assert.Equal(t, Tree{Root: TreeNode{Type: "doc", Children: []TreeNode{{
		Type: "p", Attrs: map[string]string{"a": "1"}, Children: []TreeNode{{Type: "text", Value: "hi"}},
	}}}}, got["tr"])
	assert.Equal(t, Text{}, got["et"])
	assert.Equal(t, Tree{Root: TreeNode{Type: "root"}}, got["ee"])
	assert.Equal(t, true, got["yes"])
	assert.Equal(t, false, got["no"])
	assert.Equal(t, "b", obj[0].Key, "members keep their order")
}

func TestParseObjectRefuses(t *testing.T) {
	for name, s := range map[string]string{
		"empty":               ``,
		"not an object":       `[1]`,
		"trailing text":       `{} x`,
		"unclosed":            `{"a":1`,
		"bad key":             `{a:1}`,
		"duplicate key":       `{"a":1,"a":2}`,
		"Int too big":         `{"a":Int(2147483648)}`,
		"Int not integral":    `{"a":Int(1.5)}`,
		"unknown constructor": `{"a":Map(1)}`,
		"bad base64":          `{"a":BinData("%%")}`,
		"bad date":            `{"a":Date("yesterday")}`,
		"counter of string":   `{"a":Counter("x")}`,
		"text of numbers":     `{"a":Text([1])}`,
		"text without val":    `{"a":Text([{"attrs":{}}])}`,
		"tree of array":       `{"a":Tree([])}`,
		"tree child value":    `{"a":Tree({"type":"p","value":"x"})}`,
		"tree text children":  `{"a":Tree({"type":"text","children":[{"type":"p"}]})}`,
		"unknown literal":     `{"a":undefined}`,
		"unclosed string":     `{"a":"x}`,
		"bad escape":          `{"a":"\x"}`,
		"deep":                `{"a":` + deep(100) + `}`,
	} {
		_, err := ParseObject(s)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
}

func deep(n int) string {
	s := "1"
	for range n {
		s = "[" + s + "]"
	}
	return s
}

func FuzzParseObject(f *testing.F) {
	f.Add(upstreamRoot)
	f.Add(`{}`)
	f.Add(`{"a":[{"b":Long(-1)}],"c":Text([{"val":"x","attrs":{"k":"v"}}])}`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseObject(s) // must not panic or hang
	})
}
