package crdt

import (
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// appendEscapedRune writes r escaped as the SDK's escapeString does: quote, backslash and the
// control characters \n \r \f \b \t, and U+2028/U+2029; everything else as is.
func appendEscapedRune(b []byte, r rune) []byte {
	switch r {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\f':
		return append(b, '\\', 'f')
	case '\b':
		return append(b, '\\', 'b')
	case '\t':
		return append(b, '\\', 't')
	case '\u2028':
		return append(b, `\u2028`...)
	case '\u2029':
		return append(b, `\u2029`...)
	}
	return utf8.AppendRune(b, r)
}

// appendEscapedUnits escapes UTF-16 content; a lone surrogate comes out as U+FFFD, as Node
// prints it.
func appendEscapedUnits(b []byte, units []uint16) []byte {
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u < utf8.RuneSelf:
			b = appendEscapedRune(b, rune(u))
		case utf16.IsSurrogate(rune(u)):
			if i+1 < len(units) {
				if r := utf16.DecodeRune(rune(u), rune(units[i+1])); r != utf8.RuneError {
					b = utf8.AppendRune(b, r)
					i++
					continue
				}
			}
			b = utf8.AppendRune(b, utf8.RuneError)
		default:
			b = appendEscapedRune(b, rune(u))
		}
	}
	return b
}

// appendJSON writes the value as the SDK's CRDTTextValue.toJSON.
func (v *TextValue) appendJSON(b []byte) []byte {
	var items []string
	if v.attrs != nil && v.attrs.Len() > 0 {
		items = make([]string, 0, v.attrs.Len())
		for _, n := range v.attrs.nodes {
			if !n.removed {
				items = append(items, attrJSONItem(n.key, n.value))
			}
		}
	}
	if len(items) == 0 {
		b = append(b, `{"val":"`...)
		b = appendEscapedUnits(b, v.content)
		return append(b, `"}`...)
	}
	// The SDK sorts the rendered "key":value items as JS strings (by UTF-16 code units).
	slices.SortFunc(items, func(a, b string) int {
		switch {
		case lessUTF16(a, b):
			return -1
		case lessUTF16(b, a):
			return 1
		}
		return 0
	})
	b = append(b, `{"attrs":{`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `},"val":"`...)
	b = appendEscapedUnits(b, v.content)
	return append(b, `"}`...)
}

// attrJSONItem renders one attribute: a value that parses as a JSON string is written quoted
// and escaped, any other JSON value as JavaScript's String() of it. A value that is not JSON
// (the SDK would fail here; the server never accepts one from a change) is written as a
// string.
func attrJSONItem(key, value string) string {
	b := make([]byte, 0, len(key)+len(value)+8)
	b = append(b, '"')
	b = appendEscaped(b, key)
	b = append(b, '"', ':')
	parsed, ok := ParseJSONValue(value)
	if s, isStr := parsed.(string); !ok || isStr {
		if !ok {
			s = value
		}
		b = append(b, '"')
		b = appendEscaped(b, s)
		b = append(b, '"')
		return string(b)
	}
	b = append(b, jsString(parsed, true)...)
	return string(b)
}

// ParseJSONValue parses one JSON value (numbers as json.Number) and reports whether value is
// exactly one JSON value, as JSON.parse accepts it.
func ParseJSONValue(value string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(value))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// jsString is JavaScript's String() of a parsed JSON value. Inside an array, null is empty.
func jsString(v any, top bool) string {
	switch x := v.(type) {
	case nil:
		if top {
			return "null"
		}
		return ""
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !math.IsInf(f, 0) {
			return string(x)
		}
		return string(appendJSNumber(nil, f))
	case []any:
		var sb strings.Builder
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(jsString(e, false))
		}
		return sb.String()
	default:
		return "[object Object]"
	}
}
