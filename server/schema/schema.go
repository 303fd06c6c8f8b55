// Package schema checks documents against the rules of a project's schema
// as the JS SDK checks its local updates: every rule's path must lead,
// through objects, to a value of the rule's type, and a yorkie.Tree's nodes
// must follow its node rules (known types, content expressions, marks).
//
// The server uses it to refuse a pushed change that leaves the document
// breaking its rules, which a client that skips the SDK's own check could
// send. Concurrent edits the SDK accepted one by one may merge into a tree
// that breaks a content or marks rule; see Check's full flag.
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
		v := valueAt(root, r.Path)
		if msg := checkValue(v, r, full); msg != "" {
			out = append(out, Violation{Path: r.Path, Message: msg})
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
// is missing or not an object.
func valueAt(root *crdt.Object, path string) crdt.Element {
	keys := strings.Split(path, ".")
	var cur crdt.Element = root
	for _, k := range keys[1:] {
		obj, ok := cur.(*crdt.Object)
		if !ok {
			return nil
		}
		if cur, ok = obj.Get(k); !ok {
			return nil
		}
	}
	return cur
}

func checkValue(v crdt.Element, r database.Rule, full bool) string {
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
			return checkTree(t, r.TreeNodes)
		}
		ok = true
	default:
		p, isPrim := v.(*crdt.Primitive)
		ok = isPrim && p.Type() == primitiveTypes[r.Type]
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("expected %s at path %s", r.Type, r.Path)
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
