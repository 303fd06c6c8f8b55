package document

import (
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// styleOp removes and sets attributes on a range of a text (Text.setStyle and removeStyle).
type styleOp struct {
	parent     crdt.Ticket
	from, to   crdt.TextPos
	attrs      []crdt.TextAttr
	remove     []string
	executedAt crdt.Ticket
}

func decodeStyle(pb *api.Operation_Style) (Operation, error) {
	parent, err := textTicket(pb.GetParentCreatedAt(), "style parent_created_at")
	if err != nil {
		return nil, err
	}
	from, err := textPosFromPB(pb.GetFrom(), "style from")
	if err != nil {
		return nil, err
	}
	to, err := textPosFromPB(pb.GetTo(), "style to")
	if err != nil {
		return nil, err
	}
	executedAt, err := textExecutedAt(pb.GetExecutedAt(), "style")
	if err != nil {
		return nil, err
	}
	if err := checkUTF8("style attributes_to_remove", pb.GetAttributesToRemove()...); err != nil {
		return nil, err
	}
	attrs, err := textAttrsFromPB(pb.GetAttributes(), "style")
	if err != nil {
		return nil, err
	}
	if err := checkCreatedAtMap(pb.GetCreatedAtMapByActor(), "style"); err != nil {
		return nil, err
	}
	return &styleOp{
		parent: parent, from: from, to: to, attrs: attrs,
		remove: pb.GetAttributesToRemove(), executedAt: executedAt,
	}, nil
}

// Execute applies the style. An empty vv (a change without a version vector) styles every
// node; otherwise only nodes the change had seen created.
func (o *styleOp) Execute(root *crdt.Root, vv crdt.VersionVector) error {
	text, err := findText(root, o.parent, "style")
	if err != nil {
		return err
	}
	pairs, diff, err := text.Style(o.from, o.to, o.attrs, o.remove, o.executedAt, vv)
	if err != nil {
		return textError("style", err)
	}
	root.AddLiveSize(diff)
	for _, p := range pairs {
		root.RegisterGCPair(p)
	}
	return nil
}
