package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// validBodies are bodies @yorkie-js/schema's validate finds no error in.
var validBodies = []string{
	``,
	`type Document = {};`,
	`type Document = {
  title: string;
  done?: boolean;
  // a comment
  tags: Array<string>;
  ids: long[];
  meta: { created: date; raw: bytes; n: double; nothing: null; x: any; };
  todos: Todo[];
  text: yorkie.Text;
  counter: yorkie.Counter;
  obj: yorkie.Object<{ a: string; }>;
  arr: yorkie.Array<integer>;
  content: yorkie.Tree<{
    doc: { content: "paragraph+"; };
    paragraph: { content: "text*"; marks: "bold italic"; group: "block" };
    text: {};
  }>;
  plain: yorkie.Tree;
  color: "red" | "green" | 3;
  both: (Todo & { extra: string; });
};
/* a block
   comment */
type Todo = { text: string; };
let version: integer = 1;`,
}

func TestCheckBody(t *testing.T) {
	for _, b := range validBodies {
		assert.NoError(t, CheckBody(b), b)
	}
	for name, b := range map[string]string{
		"unclosed object":       `type Document = { title: string; `,
		"missing semicolon":     `type Document = { title: string }`,
		"unknown character":     `type Document = { title: string#; };`,
		"keyword as name":       `type Document = { type: string; };`,
		"undefined type":        `type Document = { todo: Todo; };`,
		"duplicate type":        `type A = {}; type A = {};`,
		"duplicate property":    `type Document = { a: string; a: integer; };`,
		"duplicate tree node":   `type Document = { t: yorkie.Tree<{ p: {}; p: {}; }>; };`,
		"unknown node property": `type Document = { t: yorkie.Tree<{ p: { colour: "x"; }; }>; };`,
		"unclosed comment":      `type Document = {}; /* no end`,
		"unclosed string":       `type Document = { c: "abc; };`,
		"statement":             `Document = {};`,
		"unknown yorkie type":   `type Document = { m: yorkie.Map; };`,
		"too deep":              `type Document = ` + strings.Repeat("(", 200) + `string` + strings.Repeat(")", 200) + `;`,
	} {
		assert.ErrorIs(t, CheckBody(b), ErrInvalidBody, name)
	}
}

func FuzzCheckBody(f *testing.F) {
	for _, b := range validBodies {
		f.Add(b)
	}
	f.Add(`type Document = { t: yorkie.Tree<{ p: { content: "a"; }; }>; };`)
	f.Fuzz(func(t *testing.T, body string) {
		_ = CheckBody(body) // must not panic or hang
	})
}
