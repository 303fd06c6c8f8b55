// Package schema checks documents against the rules of a project's schema
// as the JS SDK checks its local updates: every rule's path must lead,
// through objects, to a value of the rule's type, and a yorkie.Tree's nodes
// must follow its node rules (known types, content expressions, marks).
//
// The server uses it to refuse a pushed change that leaves the document
// breaking its rules in a way the SDK's own check would have refused, which
// a client that skips that check could send (see Introduced: the SDK's undo
// and redo are not checked). Concurrent edits the SDK accepted one by one
// may merge into a tree that breaks a content or marks rule; see Check's
// full flag.
package schema

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// ErrInvalidRules reports rules the SDK could not check a document with.
var ErrInvalidRules = errors.New("invalid schema rules")

// Rule types the SDK's validator checks.
var primitiveTypes = map[string]crdt.PrimitiveType{
	"null": crdt.PrimitiveNull, "boolean": crdt.PrimitiveBoolean, "integer": crdt.PrimitiveInteger,
	"long": crdt.PrimitiveLong, "double": crdt.PrimitiveDouble, "string": crdt.PrimitiveString,
	"bytes": crdt.PrimitiveBytes, "date": crdt.PrimitiveDate,
}

const (
	typeObject  = "object"
	typeArray   = "array"
	typeText    = "yorkie.Text"
	typeTree    = "yorkie.Tree"
	typeCounter = "yorkie.Counter"
)

// builderOnly are the rule types @yorkie-js/schema's buildRuleset writes
// that the SDK's validator does not check (it refuses every update of a
// document with one of them). They are stored, as upstream stores them, and
// the server checks nothing for them.
var builderOnly = map[string]bool{"enum": true, "union": true, "yorkie.Object": true, "yorkie.Array": true}

func checked(typ string) bool {
	_, prim := primitiveTypes[typ]
	return prim || typ == typeObject || typ == typeArray || typ == typeText || typ == typeTree || typ == typeCounter
}

// CheckRules refuses rules no schema produces: a path that does not start
// with "$", an unknown type, tree node rules on anything but a yorkie.Tree,
// or a node rule without a type, repeated, or with a content expression
// that does not parse.
func CheckRules(rules []database.Rule) error {
	for i, r := range rules {
		if !strings.HasPrefix(r.Path, "$") {
			return fmt.Errorf("%w: rule %d: path %q does not start with $", ErrInvalidRules, i, r.Path)
		}
		if !checked(r.Type) && !builderOnly[r.Type] {
			return fmt.Errorf("%w: rule %d (%s): unknown type %q", ErrInvalidRules, i, r.Path, r.Type)
		}
		if len(r.TreeNodes) > 0 && r.Type != typeTree {
			return fmt.Errorf("%w: rule %d (%s): tree node rules on a %s", ErrInvalidRules, i, r.Path, r.Type)
		}
		seen := map[string]bool{}
		for _, n := range r.TreeNodes {
			if n.NodeType == "" || seen[n.NodeType] {
				return fmt.Errorf("%w: rule %d (%s): node type %q empty or repeated", ErrInvalidRules, i, r.Path, n.NodeType)
			}
			seen[n.NodeType] = true
			if _, err := parseContent(n.Content); err != nil {
				return fmt.Errorf("%w: rule %d (%s): node %q: %w", ErrInvalidRules, i, r.Path, n.NodeType, err)
			}
		}
	}
	return nil
}

// Violation is one rule a document breaks.
type Violation struct {
	Path    string
	Message string
	// Missing: a key of the path is not there.
	Missing bool
	// Found names what is at the path when it is there, the element's type
	// as rules name types, or what stands on the way ("inside integer").
	Found string
	// Content: the value is a yorkie.Tree that breaks the rule's node
	// rules (content expressions, marks, node types).
	Content bool
}

// Check returns the rules root breaks, as the SDK's validateYorkieRuleset
// finds them. With full false it leaves out the tree checks concurrent
// edits can break: content expressions, marks and node types.
func Check(root *crdt.Object, rules []database.Rule, full bool) []Violation {
	var out []Violation
	for _, r := range rules {
		if !checked(r.Type) {
			continue
		}
		v, blocked := valueAt(root, r.Path)
		if msg, content := checkValue(v, r, full); msg != "" {
			found := kindOf(v)
			if blocked != nil {
				found = "inside " + kindOf(blocked)
			}
			out = append(out, Violation{Path: r.Path, Message: msg, Missing: v == nil && blocked == nil, Found: found, Content: content})
		}
	}
	return out
}

// Describe joins violations into one message, as the SDK's error does.
func Describe(vs []Violation) string {
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.Message
	}
	return strings.Join(msgs, ", ")
}

// valueAt follows the path's keys (after "$") through objects; nil when one
// is missing or not an object, and then the element that is not an object
// in blocked (nil when a key is missing).
func valueAt(root *crdt.Object, path string) (v, blocked crdt.Element) {
	keys := strings.Split(path, ".")
	var cur crdt.Element = root
	for _, k := range keys[1:] {
		obj, ok := cur.(*crdt.Object)
		if !ok {
			return nil, cur
		}
		if cur, ok = obj.Get(k); !ok {
			return nil, nil
		}
	}
	return cur, nil
}

// kindOf names an element's type as rules do ("" for nil).
func kindOf(v crdt.Element) string {
	switch e := v.(type) {
	case nil:
		return ""
	case *crdt.Object:
		return typeObject
	case *crdt.Array:
		return typeArray
	case *crdt.Text:
		return typeText
	case *crdt.Counter:
		return typeCounter
	case *crdt.Tree:
		return typeTree
	case *crdt.Primitive:
		for name, t := range primitiveTypes {
			if e.Type() == t {
				return name
			}
		}
	}
	return fmt.Sprintf("%T", v)
}

// checkValue returns what v breaks of r ("" when nothing), and whether it
// is a tree's node rules.
func checkValue(v crdt.Element, r database.Rule, full bool) (string, bool) {
	ok := false
	switch r.Type {
	case typeObject:
		_, ok = v.(*crdt.Object)
	case typeArray:
		_, ok = v.(*crdt.Array)
	case typeText:
		_, ok = v.(*crdt.Text)
	case typeCounter:
		_, ok = v.(*crdt.Counter)
	case typeTree:
		t, isTree := v.(*crdt.Tree)
		if !isTree {
			break
		}
		if full && len(r.TreeNodes) > 0 {
			msg := checkTree(t, r.TreeNodes)
			return msg, msg != ""
		}
		ok = true
	default:
		p, isPrim := v.(*crdt.Primitive)
		ok = isPrim && p.Type() == primitiveTypes[r.Type]
	}
	if ok {
		return "", false
	}
	return fmt.Sprintf("expected %s at path %s", r.Type, r.Path), false
}

// Introduced returns the violations of after that a change from a state
// with the violations of before may not make, those the SDK could not have
// let through: a value now at a rule's path of a type the rule refuses,
// where before had no such violation (same path, type found and message).
//
// The SDK checks the rules on update() only; its undo and redo apply the
// reverse of earlier changes unchecked. An undo of the change that created
// a required value leaves nothing at its path, so a missing value is never
// refused; and a violation the document had already (content from before
// its schema was bound, concurrent merges) does not make every later
// change refused.
func Introduced(before, after []Violation) []Violation {
	var out []Violation
next:
	for _, v := range after {
		if v.Missing {
			continue
		}
		for _, b := range before {
			if b.Path == v.Path && b.Found == v.Found && b.Message == v.Message {
				continue next
			}
		}
		out = append(out, v)
	}
	return out
}

var spaces = regexp.MustCompile(`\s+`)

// treeRules are a tree rule's node rules ready to check nodes with.
type treeRules struct {
	byType  map[string]*database.TreeNodeRule
	content map[string]contentExpr
	groups  map[string][]string
}

func checkTree(t *crdt.Tree, nodes []database.TreeNodeRule) string {
	tr := treeRules{
		byType:  make(map[string]*database.TreeNodeRule, len(nodes)),
		content: make(map[string]contentExpr, len(nodes)),
		groups:  map[string][]string{},
	}
	for i := range nodes {
		n := &nodes[i]
		tr.byType[n.NodeType] = n
		if n.Group != "" {
			for _, g := range spaces.Split(n.Group, -1) {
				tr.groups[g] = append(tr.groups[g], n.NodeType)
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		e, err := parseContent(n.Content)
		if err != nil {
			// CheckRules refuses such rules; rules stored before it
			// checked them constrain nothing here.
			return ""
		}
		tr.content[n.NodeType] = e
	}
	return tr.node(t.Root())
}

func (tr *treeRules) group(name string) []string {
	if types, ok := tr.groups[name]; ok {
		return types
	}
	return []string{name}
}

func (tr *treeRules) node(n *crdt.TreeNode) string {
	rule, ok := tr.byType[n.Type()]
	if !ok {
		return fmt.Sprintf("Unknown node type: %q", n.Type())
	}
	if n.IsText() {
		return ""
	}
	var children []*crdt.TreeNode
	n.LiveChildren(func(c *crdt.TreeNode) { children = append(children, c) })
	types := make([]string, len(children))
	for i, c := range children {
		if !c.IsText() {
			if _, known := tr.byType[c.Type()]; !known {
				return fmt.Sprintf("Unknown node type: %q", c.Type())
			}
		}
		types[i] = c.Type()
	}
	expr := tr.content[n.Type()]
	if !expr.matches(types, tr.group) {
		return fmt.Sprintf("Node %q: children do not match content expression %q", n.Type(), rule.Content)
	}
	if rule.Marks != "" {
		allowed := spaces.Split(rule.Marks, -1)
		for _, c := range children {
			if !c.IsText() {
				continue
			}
			bad := ""
			c.Attrs(func(key, _ string, _ crdt.Ticket, removed bool) {
				if !removed && bad == "" && !slices.Contains(allowed, key) {
					bad = key
				}
			})
			if bad != "" {
				return fmt.Sprintf("Node %q: text child has disallowed mark %q", n.Type(), bad)
			}
		}
	}
	for _, c := range children {
		if !c.IsText() {
			if msg := tr.node(c); msg != "" {
				return msg
			}
		}
	}
	return ""
}
