package schema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalidContent reports a tree node rule's content expression that does
// not parse.
var ErrInvalidContent = errors.New("invalid content expression")

// contentExpr is a parsed content expression: which children, in which
// order and how many times, a tree node may hold. Names are node types or
// groups; "+", "*" and "?" repeat; "|" chooses; parentheses group. An empty
// expression allows no children.
type contentExpr struct {
	kind     exprKind
	name     string        // exprName
	parts    []contentExpr // exprSeq, exprAlt; exprRepeat holds one
	min      int           // exprRepeat
	infinite bool          // exprRepeat: no upper bound (else at most 1)
}

type exprKind int

const (
	exprName exprKind = iota
	exprSeq
	exprAlt
	exprRepeat
)

type token struct {
	op   byte // 0 for a name
	name string
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case strings.IndexByte("+*?|()", c) >= 0:
			out = append(out, token{op: c})
			i++
		case isNameByte(c):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			out = append(out, token{name: s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("%w: unexpected %q at %d", ErrInvalidContent, c, i)
		}
	}
	return out, nil
}

// parseContent parses a content expression.
func parseContent(s string) (contentExpr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return contentExpr{}, err
	}
	if len(toks) == 0 {
		return contentExpr{kind: exprSeq}, nil
	}
	p := &parser{toks: toks}
	e, err := p.alternatives()
	if err != nil {
		return contentExpr{}, err
	}
	if p.pos < len(toks) {
		return contentExpr{}, fmt.Errorf("%w: unexpected token %d in %q", ErrInvalidContent, p.pos, s)
	}
	return e, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() (token, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return token{}, false
}

func (p *parser) alternatives() (contentExpr, error) {
	var alts []contentExpr
	for {
		seq, err := p.sequence()
		if err != nil {
			return contentExpr{}, err
		}
		alts = append(alts, seq)
		if t, ok := p.peek(); !ok || t.op != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return contentExpr{kind: exprAlt, parts: alts}, nil
}

func (p *parser) sequence() (contentExpr, error) {
	var items []contentExpr
	for {
		t, ok := p.peek()
		if !ok || t.op == '|' || t.op == ')' {
			break
		}
		e, err := p.element()
		if err != nil {
			return contentExpr{}, err
		}
		items = append(items, e)
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return contentExpr{kind: exprSeq, parts: items}, nil
}

func (p *parser) element() (contentExpr, error) {
	t, ok := p.peek()
	if !ok {
		return contentExpr{}, fmt.Errorf("%w: unexpected end", ErrInvalidContent)
	}
	var atom contentExpr
	switch t.op {
	case '(':
		p.pos++
		inner, err := p.alternatives()
		if err != nil {
			return contentExpr{}, err
		}
		if t, ok := p.peek(); !ok || t.op != ')' {
			return contentExpr{}, fmt.Errorf("%w: unmatched parenthesis", ErrInvalidContent)
		}
		p.pos++
		atom = inner
	case 0:
		p.pos++
		atom = contentExpr{kind: exprName, name: t.name}
	default:
		return contentExpr{}, fmt.Errorf("%w: expected a node type, got %q", ErrInvalidContent, t.op)
	}
	if t, ok := p.peek(); ok {
		switch t.op {
		case '+':
			p.pos++
			return contentExpr{kind: exprRepeat, parts: []contentExpr{atom}, min: 1, infinite: true}, nil
		case '*':
			p.pos++
			return contentExpr{kind: exprRepeat, parts: []contentExpr{atom}, infinite: true}, nil
		case '?':
			p.pos++
			return contentExpr{kind: exprRepeat, parts: []contentExpr{atom}}, nil
		}
	}
	return atom, nil
}

// positions is a set of offsets into the children's types.
type positions map[int]struct{}

// match returns the offsets reachable from each of from by matching e
// against types; groups maps a name to the node types it stands for.
func (e *contentExpr) match(types []string, from positions, groups func(string) []string) positions {
	out := positions{}
	switch e.kind {
	case exprName:
		allowed := groups(e.name)
		for p := range from {
			if p < len(types) && slices.Contains(allowed, types[p]) {
				out[p+1] = struct{}{}
			}
		}
	case exprSeq:
		cur := from
		for i := range e.parts {
			if len(cur) == 0 {
				break
			}
			cur = e.parts[i].match(types, cur, groups)
		}
		return cur
	case exprAlt:
		for i := range e.parts {
			for p := range e.parts[i].match(types, from, groups) {
				out[p] = struct{}{}
			}
		}
	case exprRepeat:
		if e.min == 0 {
			for p := range from {
				out[p] = struct{}{}
			}
		}
		cur := from
		for count := 1; e.infinite || count <= 1; count++ {
			next := positions{}
			for p := range e.parts[0].match(types, cur, groups) {
				if _, seen := out[p]; !seen || count < e.min {
					next[p] = struct{}{}
				}
			}
			if len(next) == 0 {
				break
			}
			cur = next
			if count >= e.min {
				for p := range cur {
					out[p] = struct{}{}
				}
			}
		}
	}
	return out
}

// matches reports whether the children's types match the expression whole.
func (e *contentExpr) matches(types []string, groups func(string) []string) bool {
	_, ok := e.match(types, positions{0: {}}, groups)[len(types)]
	return ok
}
