package schema

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

func TestContentExpressions(t *testing.T) {
	groups := func(name string) []string {
		if name == "block" {
			return []string{"paragraph", "heading"}
		}
		return []string{name}
	}
	cases := []struct {
		expr  string
		types []string
		want  bool
	}{
		{"", nil, true},
		{"", []string{"text"}, false},
		{"paragraph+", nil, false},
		{"paragraph+", []string{"paragraph", "paragraph"}, true},
		{"paragraph*", nil, true},
		{"heading paragraph*", []string{"heading"}, true},
		{"heading paragraph*", []string{"paragraph"}, false},
		{"heading? paragraph", []string{"paragraph"}, true},
		{"heading? paragraph", []string{"heading", "heading", "paragraph"}, false},
		{"(heading | paragraph)+", []string{"paragraph", "heading", "paragraph"}, true},
		{"block+", []string{"heading", "paragraph"}, true},
		{"block+", []string{"heading", "image"}, false},
		{"text*", []string{"text", "text"}, true},
		{"(paragraph*)+", nil, true},
		{"a (b c)* d", []string{"a", "b", "c", "b", "c", "d"}, true},
		{"a (b c)* d", []string{"a", "b", "d"}, false},
	}
	for _, c := range cases {
		e, err := parseContent(c.expr)
		require.NoError(t, err, c.expr)
		assert.Equal(t, c.want, e.matches(c.types, groups), "%q against %v", c.expr, c.types)
	}
	for _, bad := range []string{"(paragraph", "paragraph)", "+", "a-b", "(", "a **"} {
		_, err := parseContent(bad)
		assert.ErrorIs(t, err, ErrInvalidContent, bad)
	}
}

func TestCheckRules(t *testing.T) {
	ok := []database.Rule{
		{Path: "$", Type: "object"},
		{Path: "$.title", Type: "string"},
		{Path: "$.tags", Type: "enum"},
		{Path: "$.doc", Type: "yorkie.Tree", TreeNodes: []database.TreeNodeRule{{NodeType: "doc", Content: "p+"}, {NodeType: "p"}}},
	}
	require.NoError(t, CheckRules(ok))
	for name, r := range map[string]database.Rule{
		"unknown type":      {Path: "$.a", Type: "yorkie.Map"},
		"no $":              {Path: "a", Type: "string"},
		"nodes on a string": {Path: "$.a", Type: "string", TreeNodes: []database.TreeNodeRule{{NodeType: "p"}}},
		"repeated node":     {Path: "$.a", Type: "yorkie.Tree", TreeNodes: []database.TreeNodeRule{{NodeType: "p"}, {NodeType: "p"}}},
		"bad content":       {Path: "$.a", Type: "yorkie.Tree", TreeNodes: []database.TreeNodeRule{{NodeType: "p", Content: "(x"}}},
	} {
		assert.ErrorIs(t, CheckRules([]database.Rule{r}), ErrInvalidRules, name)
	}
}

func ticket(l int64) crdt.Ticket { return crdt.Ticket{Lamport: l} }

func TestCheck(t *testing.T) {
	root := crdt.NewObject(crdt.InitialTicket)
	str, err := crdt.NewPrimitive(crdt.PrimitiveString, []byte("hi"), ticket(1))
	require.NoError(t, err)
	root.Set("title", str, ticket(1))
	inner := crdt.NewObject(ticket(2))
	root.Set("meta", inner, ticket(2))
	n, err := crdt.NewPrimitive(crdt.PrimitiveInteger, []byte{7, 0, 0, 0}, ticket(3))
	require.NoError(t, err)
	inner.Set("n", n, ticket(3))

	// doc > [paragraph > text, heading], listed in postorder with depths.
	nodes := []*crdt.TreeNode{
		crdt.NewTreeNode(crdt.TreeNodeID{CreatedAt: ticket(5)}, "text", "a"),
		crdt.NewTreeNode(crdt.TreeNodeID{CreatedAt: ticket(6)}, "paragraph", ""),
		crdt.NewTreeNode(crdt.TreeNodeID{CreatedAt: ticket(7)}, "heading", ""),
		crdt.NewTreeNode(crdt.TreeNodeID{CreatedAt: ticket(8)}, "doc", ""),
	}
	treeRoot, err := crdt.BuildTreeRoot(nodes, []int32{2, 1, 1, 0})
	require.NoError(t, err)
	root.Set("content", crdt.NewTree(treeRoot, ticket(4)), ticket(4))

	tree := func(docContent string, extra ...database.TreeNodeRule) database.Rule {
		nodes := append([]database.TreeNodeRule{
			{NodeType: "doc", Content: docContent}, {NodeType: "paragraph", Content: "text*"}, {NodeType: "text"},
		}, extra...)
		return database.Rule{Path: "$.content", Type: "yorkie.Tree", TreeNodes: nodes}
	}
	heading := database.TreeNodeRule{NodeType: "heading", Group: "block"}
	cases := []struct {
		name  string
		rules []database.Rule
		want  int
	}{
		{"types hold", []database.Rule{{Path: "$", Type: "object"}, {Path: "$.title", Type: "string"}, {Path: "$.meta.n", Type: "integer"}, {Path: "$.content", Type: "yorkie.Tree"}}, 0},
		{"wrong primitive", []database.Rule{{Path: "$.title", Type: "integer"}}, 1},
		{"missing", []database.Rule{{Path: "$.nothing", Type: "string"}, {Path: "$.title.x", Type: "string"}}, 2},
		{"wrong containers", []database.Rule{{Path: "$.meta", Type: "array"}, {Path: "$.title", Type: "yorkie.Text"}, {Path: "$.meta", Type: "yorkie.Counter"}}, 3},
		{"unchecked types", []database.Rule{{Path: "$.title", Type: "enum"}}, 0},
		{"tree holds", []database.Rule{tree("paragraph heading", heading)}, 0},
		{"tree groups", []database.Rule{tree("paragraph block", heading)}, 0},
		{"tree unknown node", []database.Rule{tree("paragraph heading")}, 1},
		{"tree content", []database.Rule{tree("paragraph+", heading)}, 1},
	}
	for _, c := range cases {
		got := Check(root, c.rules, true)
		assert.Len(t, got, c.want, "%s: %v", c.name, got)
	}
	// Without the full check the tree's nodes are not looked at.
	assert.Empty(t, Check(root, []database.Rule{tree("paragraph+", heading)}, false))
	assert.Len(t, Check(root, []database.Rule{{Path: "$.title", Type: "yorkie.Tree"}}, false), 1)
}

func TestIntroduced(t *testing.T) {
	root := crdt.NewObject(crdt.InitialTicket)
	str, err := crdt.NewPrimitive(crdt.PrimitiveString, []byte("hi"), ticket(1))
	require.NoError(t, err)
	root.Set("title", str, ticket(1))
	rules := []database.Rule{{Path: "$.title", Type: "integer"}, {Path: "$.gone", Type: "string"}, {Path: "$.title.x", Type: "string"}}
	vs := Check(root, rules, true)
	require.Len(t, vs, 3)
	assert.Equal(t, Violation{Path: "$.title", Message: "expected integer at path $.title", Found: "string"}, vs[0])
	assert.True(t, vs[1].Missing, "nothing at $.gone")
	assert.Equal(t, "inside string", vs[2].Found, "a string stands on the way to $.title.x")
	assert.False(t, vs[2].Missing)

	// From a state that broke no rule, the wrong types are new; a missing
	// value never counts (the SDK's undo of its creation leaves it so).
	assert.Equal(t, []Violation{vs[0], vs[2]}, Introduced(nil, vs))
	// What the state before had already is not new.
	assert.Empty(t, Introduced(vs, vs))
	// Another type at the same path is.
	before := []Violation{{Path: "$.title", Message: vs[0].Message, Found: "boolean"}}
	assert.Equal(t, []Violation{vs[0], vs[2]}, Introduced(before, vs))
}
