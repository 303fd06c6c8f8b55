// Package yson reads YSON, upstream Yorkie's text form of a document's
// root: JSON extended with constructors for the values JSON cannot tell
// apart: Int(1), Long(2), BinData("<base64>"), Date("<RFC 3339>"),
// Counter(Int(n)) and Counter(Long(n)), DedupCounter(Int(n),"<base64>"),
// Text([{"val":"..","attrs":{..}}, ..]) and Tree({"type":..,"children":[..]})
// (Text() and Tree() are empty). A plain JSON number is a double, as
// upstream reads it.
//
// The parser reads the text once, by its grammar: a string that happens to
// hold "Int(" stays a string.
package yson

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrInvalid reports YSON that does not parse, upstream's "invalid YSON".
var ErrInvalid = errors.New("invalid YSON")

// Limits of what Parse reads.
const (
	MaxBytes = 4 << 20
	MaxDepth = 64
)

// Values of a parsed document. Objects keep their members in the order
// written; primitives are nil, bool, float64 (a double), string, Int, Long,
// []byte (BinData) and time.Time (Date).
type (
	// Object is a JSON object's members, in order.
	Object []Member
	// Member is one key of an Object.
	Member struct {
		Key   string
		Value any
	}
	// Array is a JSON array.
	Array []any
	// Int is a 32-bit integer.
	Int int32
	// Long is a 64-bit integer.
	Long int64
	// Counter is a counter of Int or Long values (Long says which).
	Counter struct {
		Long  bool
		Value int64
	}
	// Text is a text's nodes, each a run of characters with attributes.
	Text []TextNode
	// TextNode is one run of a Text.
	TextNode struct {
		Value string
		Attrs map[string]string
	}
	// Tree is a tree's root node.
	Tree struct{ Root TreeNode }
	// TreeNode is an element node (Type, Attrs, Children) or a text node
	// (Type "text" and Value).
	TreeNode struct {
		Type     string
		Value    string
		Attrs    map[string]string
		Children []TreeNode
	}
)

// DefaultRootNodeType is a tree node's type when the YSON names none, as
// upstream's.
const DefaultRootNodeType = "root"

// ParseObject parses YSON whose value is an object: a document's root.
func ParseObject(s string) (Object, error) {
	if len(s) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(s), MaxBytes)
	}
	p := &parser{s: s}
	p.space()
	if p.peek() != '{' {
		return nil, p.errorf("the root must be an object")
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("text after the root object")
	}
	return v.(Object), nil
}

type parser struct {
	s string
	i int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrInvalid, p.i, fmt.Sprintf(format, args...))
}

func (p *parser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) expect(c byte) error {
	p.space()
	if p.peek() != c {
		return p.errorf("expected %q", c)
	}
	p.i++
	return nil
}

// word reads letters (a constructor or literal name).
func (p *parser) word() string {
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, p.errorf("nested deeper than %d", MaxDepth)
	}
	p.space()
	switch c := p.peek(); {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return p.named(depth)
	}
	return nil, p.errorf("expected a value")
}

func (p *parser) object(depth int) (Object, error) {
	p.i++ // {
	obj := Object{}
	seen := map[string]bool{}
	p.space()
	if p.peek() == '}' {
		p.i++
		return obj, nil
	}
	for {
		p.space()
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, p.errorf("key %q twice", key)
		}
		seen[key] = true
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj = append(obj, Member{Key: key, Value: v})
		p.space()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, nil
		default:
			return nil, p.errorf(`expected "," or "}"`)
		}
	}
}

func (p *parser) array(depth int) (Array, error) {
	p.i++ // [
	arr := Array{}
	p.space()
	if p.peek() == ']' {
		p.i++
		return arr, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.space()
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, nil
		default:
			return nil, p.errorf(`expected "," or "]"`)
		}
	}
}

// str reads a JSON string.
func (p *parser) str() (string, error) {
	if p.peek() != '"' {
		return "", p.errorf("expected a string")
	}
	start := p.i
	p.i++
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			var out string
			if err := json.Unmarshal([]byte(p.s[start:p.i]), &out); err != nil {
				return "", p.errorf("bad string: %v", err)
			}
			return out, nil
		}
		p.i++
	}
	return "", p.errorf("string not closed")
}

// numberText reads a JSON number's text.
func (p *parser) numberText() string {
	start := p.i
	if p.peek() == '-' {
		p.i++
	}
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.' || p.s[p.i] == 'e' || p.s[p.i] == 'E' || p.s[p.i] == '+' || p.s[p.i] == '-') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) number() (float64, error) {
	text := p.numberText()
	var f float64
	if err := json.Unmarshal([]byte(text), &f); err != nil {
		return 0, p.errorf("bad number %q", text)
	}
	return f, nil
}

// integer reads an integer argument of Int( or Long(.
func (p *parser) integer(bits int) (int64, error) {
	p.space()
	text := p.numberText()
	n, err := strconv.ParseInt(text, 10, bits)
	if err != nil {
		return 0, p.errorf("bad %d-bit integer %q", bits, text)
	}
	return n, nil
}

// named reads a literal (null, true, false) or a constructor call.
func (p *parser) named(depth int) (any, error) {
	name := p.word()
	switch name {
	case "null":
		return nil, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if p.peek() != '(' {
		return nil, p.errorf("unknown name %q", name)
	}
	p.i++
	v, err := p.call(name, depth)
	if err != nil {
		return nil, err
	}
	if err := p.expect(')'); err != nil {
		return nil, err
	}
	return v, nil
}

func (p *parser) call(name string, depth int) (any, error) {
	switch name {
	case "Int":
		n, err := p.integer(32)
		return Int(n), err
	case "Long":
		n, err := p.integer(64)
		return Long(n), err
	case "BinData":
		p.space()
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, p.errorf("BinData: %v", err)
		}
		return b, nil
	case "Date":
		p.space()
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, p.errorf("Date: %v", err)
		}
		return t, nil
	case "Counter":
		p.space()
		switch w := p.word(); w {
		case "Int", "Long":
			if p.peek() != '(' {
				return nil, p.errorf("expected Counter(%s(n))", w)
			}
			p.i++
			bits := 32
			if w == "Long" {
				bits = 64
			}
			n, err := p.integer(bits)
			if err != nil {
				return nil, err
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			return Counter{Long: w == "Long", Value: n}, nil
		default:
			return nil, p.errorf("expected Counter(Int(n)) or Counter(Long(n))")
		}
	case "Text":
		p.space()
		if p.peek() == ')' {
			return Text{}, nil
		}
		return p.text(depth)
	case "Tree":
		p.space()
		if p.peek() == ')' {
			return Tree{Root: TreeNode{Type: DefaultRootNodeType}}, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj, ok := v.(Object)
		if !ok {
			return nil, p.errorf("Tree( takes an object")
		}
		root, err := treeNode(obj, depth+1)
		if err != nil {
			return nil, p.errorf("Tree: %v", err)
		}
		return Tree{Root: root}, nil
	}
	return nil, p.errorf("unknown constructor %q", name)
}

func (p *parser) text(depth int) (Text, error) {
	v, err := p.value(depth + 1)
	if err != nil {
		return nil, err
	}
	arr, ok := v.(Array)
	if !ok {
		return nil, p.errorf("Text( takes an array")
	}
	out := make(Text, 0, len(arr))
	for _, e := range arr {
		obj, ok := e.(Object)
		if !ok {
			return nil, p.errorf("a Text node must be an object")
		}
		var n TextNode
		hasVal := false
		for _, m := range obj {
			switch m.Key {
			case "val":
				s, ok := m.Value.(string)
				if !ok {
					return nil, p.errorf(`a Text node's "val" must be a string`)
				}
				n.Value, hasVal = s, true
			case "attrs":
				attrs, err := stringMap(m.Value)
				if err != nil {
					return nil, p.errorf("Text attrs: %v", err)
				}
				n.Attrs = attrs
			default:
				return nil, p.errorf("unknown Text node field %q", m.Key)
			}
		}
		if !hasVal {
			return nil, p.errorf(`a Text node needs "val"`)
		}
		out = append(out, n)
	}
	return out, nil
}

func stringMap(v any) (map[string]string, error) {
	obj, ok := v.(Object)
	if !ok {
		return nil, errors.New("want an object of strings")
	}
	out := make(map[string]string, len(obj))
	for _, m := range obj {
		s, ok := m.Value.(string)
		if !ok {
			return nil, fmt.Errorf("attribute %q is not a string", m.Key)
		}
		out[m.Key] = s
	}
	return out, nil
}

// treeNode reads a tree node's object: type (default "root"), value for a
// text node, attrs and children for an element.
func treeNode(obj Object, depth int) (TreeNode, error) {
	if depth > MaxDepth {
		return TreeNode{}, fmt.Errorf("nested deeper than %d", MaxDepth)
	}
	n := TreeNode{Type: DefaultRootNodeType}
	for _, m := range obj {
		switch m.Key {
		case "type":
			s, ok := m.Value.(string)
			if !ok || s == "" {
				return n, errors.New(`"type" must be a non-empty string`)
			}
			n.Type = s
		case "value":
			s, ok := m.Value.(string)
			if !ok {
				return n, errors.New(`"value" must be a string`)
			}
			n.Value = s
		case "attrs":
			attrs, err := stringMap(m.Value)
			if err != nil {
				return n, err
			}
			n.Attrs = attrs
		case "children":
			arr, ok := m.Value.(Array)
			if !ok {
				return n, errors.New(`"children" must be an array`)
			}
			for _, c := range arr {
				co, ok := c.(Object)
				if !ok {
					return n, errors.New("a child must be an object")
				}
				child, err := treeNode(co, depth+1)
				if err != nil {
					return n, err
				}
				n.Children = append(n.Children, child)
			}
		default:
			return n, fmt.Errorf("unknown tree node field %q", m.Key)
		}
	}
	if n.Type == "text" && len(n.Children) > 0 {
		return n, errors.New("a text node has no children")
	}
	if n.Type != "text" && n.Value != "" {
		return n, fmt.Errorf("element node %q has a value", n.Type)
	}
	return n, nil
}
