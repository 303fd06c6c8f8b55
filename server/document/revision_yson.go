package document

import (
	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// RestoreChangeFromYSON is RestoreChange for a revision kept as YSON only,
// as upstream Yorkie stores them (a revision imported by `yorkie migrate
// upstream` has no binary content): the change removes every member of the
// root and sets each member of root anew, made by the initial actor past
// every clock the document holds.
func (d *Document) RestoreChangeFromYSON(root yson.Object) (*api.Change, error) {
	lamport := d.lamport + 1
	for _, l := range d.vv {
		lamport = max(lamport, l+1)
	}
	actor := crdt.InitialActorID
	b := &opBuilder{lamport: lamport, actor: actor}
	rootAt := ticketToPB(crdt.InitialTicket)
	if obj, ok := d.root.Object().(*crdt.Object); ok {
		obj.Members(func(_ string, m crdt.Element) {
			if m.IsRemoved() {
				return
			}
			b.ops = append(b.ops, &api.Operation{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
				ParentCreatedAt: rootAt,
				CreatedAt:       ticketToPB(m.CreatedAt()),
				ExecutedAt:      ticketToPB(b.next()),
			}}})
		})
	}
	if err := b.members(crdt.InitialTicket, root); err != nil {
		return nil, err
	}
	vv := d.vv.Copy()
	vv[actor] = lamport
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq: 1, Lamport: lamport, ActorId: actor[:], VersionVector: VersionVectorToPB(vv),
		},
		Message:    "restore revision",
		Operations: b.ops,
	}, nil
}
