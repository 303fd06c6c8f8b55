package document

import (
	"errors"
	"fmt"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// editOp replaces a range of a text with content (Text.edit in the SDK).
type editOp struct {
	parent     crdt.Ticket
	from, to   crdt.TextPos
	content    string
	attrs      []crdt.TextAttr
	executedAt crdt.Ticket
}

func decodeEdit(pb *api.Operation_Edit) (Operation, error) {
	parent, err := textTicket(pb.GetParentCreatedAt(), "edit parent_created_at")
	if err != nil {
		return nil, err
	}
	from, err := textPosFromPB(pb.GetFrom(), "edit from")
	if err != nil {
		return nil, err
	}
	to, err := textPosFromPB(pb.GetTo(), "edit to")
	if err != nil {
		return nil, err
	}
	executedAt, err := textExecutedAt(pb.GetExecutedAt(), "edit")
	if err != nil {
		return nil, err
	}
	if err := checkUTF8("edit content", pb.GetContent()); err != nil {
		return nil, err
	}
	attrs, err := textAttrsFromPB(pb.GetAttributes(), "edit")
	if err != nil {
		return nil, err
	}
	if err := checkCreatedAtMap(pb.GetCreatedAtMapByActor(), "edit"); err != nil {
		return nil, err
	}
	return &editOp{parent: parent, from: from, to: to, content: pb.GetContent(), attrs: attrs, executedAt: executedAt}, nil
}

// textExecutedAt decodes an operation's ticket. The initial ticket cannot be one: it would
// mark nothing removed.
func textExecutedAt(pb *api.TimeTicket, what string) (crdt.Ticket, error) {
	t, err := textTicket(pb, what+" executed_at")
	if err != nil {
		return t, err
	}
	if t.IsZero() {
		return t, fmt.Errorf("%w: %s executed at the initial ticket", ErrInvalidOperation, what)
	}
	return t, nil
}

// findText returns the text the operation targets.
func findText(root *crdt.Root, parent crdt.Ticket, what string) (*crdt.Text, error) {
	elem, ok := root.Find(parent)
	if !ok {
		return nil, fmt.Errorf("%w: %s: no element %s", ErrElementNotFound, what, parent)
	}
	text, ok := elem.(*crdt.Text)
	if !ok {
		return nil, fmt.Errorf("%w: %s: element %s is not a text", ErrWrongElementType, what, parent)
	}
	return text, nil
}

// textError maps the text's refusals onto the document sentinels.
func textError(what string, err error) error {
	if errors.Is(err, crdt.ErrTextNodeNotFound) {
		return fmt.Errorf("%w: %s: %w", ErrElementNotFound, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidOperation, what, err)
}

// Execute applies the edit; an empty vv makes it a local edit that sees every node.
func (o *editOp) Execute(root *crdt.Root, vv crdt.VersionVector) error {
	text, err := findText(root, o.parent, "edit")
	if err != nil {
		return err
	}
	pairs, diff, err := text.Edit(o.from, o.to, o.content, o.attrs, o.executedAt, vv)
	if err != nil {
		return textError("edit", err)
	}
	root.AddLiveSize(diff)
	for _, p := range pairs {
		root.RegisterGCPair(p)
	}
	return nil
}
