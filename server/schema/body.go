package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidBody reports a schema body that does not parse.
var ErrInvalidBody = errors.New("invalid schema body")

// maxBodyBytes bounds a schema body; the admin API's requests are bounded
// too, this keeps the parser's work small on its own.
const maxBodyBytes = 64 << 10

// CheckBody parses a schema body in the language of @yorkie-js/schema
// (TypeScript-like type declarations, with yorkie.Text, yorkie.Tree and the
// other Yorkie types) and refuses it, as that package's validate does, when
// it does not parse, declares a type, a property or a tree node type twice,
// or refers to a type it does not declare.
func CheckBody(body string) error {
	if len(body) > maxBodyBytes {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidBody, len(body), maxBodyBytes)
	}
	toks, err := lexBody(body)
	if err != nil {
		return err
	}
	p := &bodyParser{toks: toks, declared: map[string]bool{}}
	if err := p.document(); err != nil {
		return err
	}
	for _, ref := range p.refs {
		if !p.declared[ref.name] && !ref.params[ref.name] {
			return fmt.Errorf("%w: line %d: type %q is not defined", ErrInvalidBody, ref.line, ref.name)
		}
	}
	return nil
}

type bodyTokKind int

const (
	tokPunct bodyTokKind = iota
	tokKeyword
	tokIdent
	tokString
	tokNumber
	tokEOF
)

type bodyTok struct {
	kind bodyTokKind
	text string
	line int
}

// keywords of the grammar: never identifiers.
var keywords = map[string]bool{
	"type": true, "let": true, "extends": true, "Array": true,
	"string": true, "boolean": true, "null": true, "integer": true, "double": true,
	"long": true, "bytes": true, "date": true, "any": true,
}

var yorkieTypes = []string{"yorkie.Object", "yorkie.Array", "yorkie.Counter", "yorkie.Text", "yorkie.Tree"}

func isIdentStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

func lexBody(s string) ([]bodyTok, error) {
	var out []bodyTok
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%w: line %d: comment not closed", ErrInvalidBody, line)
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' && s[j] != '\n' && s[j] != '\r' {
				j++
			}
			if j >= len(s) || s[j] != '"' {
				return nil, fmt.Errorf("%w: line %d: string not closed", ErrInvalidBody, line)
			}
			out = append(out, bodyTok{tokString, s[i : j+1], line})
			i = j + 1
		case isDigit(c):
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
				j++
				for j < len(s) && isDigit(s[j]) {
					j++
				}
			}
			out = append(out, bodyTok{tokNumber, s[i:j], line})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || isDigit(s[j])) {
				j++
			}
			word := s[i:j]
			kind := tokIdent
			if keywords[word] {
				kind = tokKeyword
			}
			if word == "yorkie" {
				for _, y := range yorkieTypes {
					if strings.HasPrefix(s[i:], y) {
						word, j, kind = y, i+len(y), tokKeyword
						break
					}
				}
			}
			out = append(out, bodyTok{kind, word, line})
			i = j
		case strings.IndexByte("=;:{}[]<>()|&,?", c) >= 0:
			out = append(out, bodyTok{tokPunct, string(c), line})
			i++
		default:
			return nil, fmt.Errorf("%w: line %d: unexpected character %q", ErrInvalidBody, line, c)
		}
	}
	return append(out, bodyTok{tokEOF, "", line}), nil
}

type typeRef struct {
	name   string
	line   int
	params map[string]bool
}

type bodyParser struct {
	toks     []bodyTok
	pos      int
	declared map[string]bool
	params   map[string]bool // type parameters of the declaration being read
	refs     []typeRef
	depth    int
}

// maxTypeDepth bounds nesting, so a hostile body cannot exhaust the stack.
const maxTypeDepth = 100

func (p *bodyParser) peek() bodyTok { return p.toks[p.pos] }

func (p *bodyParser) is(text string) bool {
	t := p.peek()
	return (t.kind == tokPunct || t.kind == tokKeyword) && t.text == text
}

func (p *bodyParser) fail(want string) error {
	t := p.peek()
	got := t.text
	if t.kind == tokEOF {
		got = "end of body"
	}
	return fmt.Errorf("%w: line %d: expected %s, got %q", ErrInvalidBody, t.line, want, got)
}

func (p *bodyParser) expect(text string) error {
	if !p.is(text) {
		return p.fail(fmt.Sprintf("%q", text))
	}
	p.pos++
	return nil
}

func (p *bodyParser) ident() (bodyTok, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return t, p.fail("a name")
	}
	p.pos++
	return t, nil
}

func (p *bodyParser) document() error {
	for p.peek().kind != tokEOF {
		switch {
		case p.is("type"):
			if err := p.typeAlias(); err != nil {
				return err
			}
		case p.is("let"):
			if err := p.variable(); err != nil {
				return err
			}
		default:
			return p.fail(`"type" or "let"`)
		}
	}
	return nil
}

func (p *bodyParser) typeAlias() error {
	p.pos++ // type
	name, err := p.ident()
	if err != nil {
		return err
	}
	if p.declared[name.text] {
		return fmt.Errorf("%w: line %d: duplicate type declaration %q", ErrInvalidBody, name.line, name.text)
	}
	p.declared[name.text] = true
	p.params = map[string]bool{}
	if p.is("<") {
		p.pos++
		for {
			param, err := p.ident()
			if err != nil {
				return err
			}
			p.params[param.text] = true
			if p.is("extends") {
				p.pos++
				if err := p.typ(); err != nil {
					return err
				}
			}
			if !p.is(",") {
				break
			}
			p.pos++
		}
		if err := p.expect(">"); err != nil {
			return err
		}
	}
	if err := p.expect("="); err != nil {
		return err
	}
	if err := p.typ(); err != nil {
		return err
	}
	return p.expect(";")
}

func (p *bodyParser) variable() error {
	p.pos++ // let
	if _, err := p.ident(); err != nil {
		return err
	}
	p.params = map[string]bool{}
	if p.is(":") {
		p.pos++
		if err := p.typ(); err != nil {
			return err
		}
	}
	if p.is("=") {
		p.pos++
		switch p.peek().kind {
		case tokIdent, tokString, tokNumber:
			p.pos++
		default:
			return p.fail("a name or a literal")
		}
	}
	return p.expect(";")
}

// typ reads a union of intersections of array types.
func (p *bodyParser) typ() error {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxTypeDepth {
		return fmt.Errorf("%w: line %d: types nested deeper than %d", ErrInvalidBody, p.peek().line, maxTypeDepth)
	}
	for {
		if err := p.arrayType(); err != nil {
			return err
		}
		if !p.is("|") && !p.is("&") {
			return nil
		}
		p.pos++
	}
}

func (p *bodyParser) typeArguments() error {
	if err := p.expect("<"); err != nil {
		return err
	}
	for {
		if err := p.typ(); err != nil {
			return err
		}
		if !p.is(",") {
			break
		}
		p.pos++
	}
	return p.expect(">")
}

func (p *bodyParser) arrayType() error {
	if p.is("Array") {
		p.pos++
		return p.typeArguments()
	}
	if err := p.primary(); err != nil {
		return err
	}
	for p.is("[") {
		p.pos++
		if err := p.expect("]"); err != nil {
			return err
		}
	}
	return nil
}

func (p *bodyParser) primary() error {
	t := p.peek()
	switch {
	case p.is("("):
		p.pos++
		if err := p.typ(); err != nil {
			return err
		}
		return p.expect(")")
	case p.is("{"):
		return p.object()
	case t.kind == tokKeyword && strings.HasPrefix(t.text, "yorkie."):
		p.pos++
		switch t.text {
		case "yorkie.Object", "yorkie.Array":
			return p.typeArguments()
		case "yorkie.Tree":
			if p.is("<") {
				return p.treeBody()
			}
		default:
			if p.is("<") {
				return p.typeArguments()
			}
		}
		return nil
	case t.kind == tokKeyword && t.text != "type" && t.text != "let" && t.text != "extends" && t.text != "Array":
		p.pos++ // a primitive type
		return nil
	case t.kind == tokString || t.kind == tokNumber:
		p.pos++
		return nil
	case t.kind == tokIdent:
		p.pos++
		if t.text != "true" && t.text != "false" {
			p.refs = append(p.refs, typeRef{name: t.text, line: t.line, params: p.params})
		}
		if p.is("<") {
			return p.typeArguments()
		}
		return nil
	}
	return p.fail("a type")
}

func (p *bodyParser) object() error {
	p.pos++ // {
	seen := map[string]bool{}
	for !p.is("}") {
		t := p.peek()
		if t.kind != tokIdent && t.kind != tokString {
			return p.fail(`a property name or "}"`)
		}
		p.pos++
		name := strings.Trim(t.text, `"`)
		if seen[name] {
			return fmt.Errorf("%w: line %d: duplicate property %q", ErrInvalidBody, t.line, name)
		}
		seen[name] = true
		if p.is("?") {
			p.pos++
		}
		if err := p.expect(":"); err != nil {
			return err
		}
		if err := p.typ(); err != nil {
			return err
		}
		if err := p.expect(";"); err != nil {
			return err
		}
	}
	p.pos++ // }
	return nil
}

// treeBody reads yorkie.Tree's node definitions: <{ name: { prop: "value"; ... }; ... }>.
func (p *bodyParser) treeBody() error {
	p.pos++ // <
	if err := p.expect("{"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for !p.is("}") {
		name, err := p.ident()
		if err != nil {
			return err
		}
		if seen[name.text] {
			return fmt.Errorf("%w: line %d: duplicate tree node type %q", ErrInvalidBody, name.line, name.text)
		}
		seen[name.text] = true
		if err := p.expect(":"); err != nil {
			return err
		}
		if err := p.expect("{"); err != nil {
			return err
		}
		for !p.is("}") {
			prop, err := p.ident()
			if err != nil {
				return err
			}
			switch prop.text {
			case "content", "marks", "group":
			default:
				return fmt.Errorf("%w: line %d: unsupported tree node property %q", ErrInvalidBody, prop.line, prop.text)
			}
			if err := p.expect(":"); err != nil {
				return err
			}
			if p.peek().kind != tokString {
				return p.fail("a string")
			}
			p.pos++
			if p.is(";") {
				p.pos++
			} else if !p.is("}") {
				return p.fail(`";" or "}"`)
			}
		}
		p.pos++ // }
		if err := p.expect(";"); err != nil {
			return err
		}
	}
	p.pos++ // }
	return p.expect(">")
}
