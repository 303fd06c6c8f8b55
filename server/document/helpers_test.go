package document

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

// Builders of wire changes for tests, in the shape the SDK sends them.

var (
	actorA = crdt.ActorID{11: 1}
	actorB = crdt.ActorID{11: 2}
)

func tk(lamport int64, delimiter uint32, actor crdt.ActorID) *api.TimeTicket {
	return ticketToPB(crdt.Ticket{Lamport: lamport, Delimiter: delimiter, Actor: actor})
}

func rootTicket() *api.TimeTicket { return ticketToPB(crdt.InitialTicket) }

// change wraps ops in a change of actor at lamport whose vector has seen that lamport.
func change(actor crdt.ActorID, seq uint32, lamport int64, ops ...*api.Operation) *api.Change {
	return &api.Change{
		Id: &api.ChangeID{
			ClientSeq:     seq,
			Lamport:       lamport,
			ActorId:       actor[:],
			VersionVector: VersionVectorToPB(crdt.VersionVector{actor: lamport}),
		},
		Operations: ops,
	}
}

func intValue(createdAt *api.TimeTicket, v int32) *api.JSONElementSimple {
	return &api.JSONElementSimple{
		Type:      api.ValueType_VALUE_TYPE_INTEGER,
		CreatedAt: createdAt,
		Value:     binary.LittleEndian.AppendUint32(nil, uint32(v)),
	}
}

func doubleValue(createdAt *api.TimeTicket, v float64) *api.JSONElementSimple {
	return &api.JSONElementSimple{
		Type:      api.ValueType_VALUE_TYPE_DOUBLE,
		CreatedAt: createdAt,
		Value:     binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)),
	}
}

func stringValue(createdAt *api.TimeTicket, s string) *api.JSONElementSimple {
	return &api.JSONElementSimple{Type: api.ValueType_VALUE_TYPE_STRING, CreatedAt: createdAt, Value: []byte(s)}
}

// containerValue encodes an empty object or array as the SDK does: the whole element.
func containerValue(createdAt *api.TimeTicket, array bool) *api.JSONElementSimple {
	var e *api.JSONElement
	t := api.ValueType_VALUE_TYPE_JSON_OBJECT
	if array {
		t = api.ValueType_VALUE_TYPE_JSON_ARRAY
		e = &api.JSONElement{Body: &api.JSONElement_JsonArray{JsonArray: &api.JSONElement_JSONArray{CreatedAt: createdAt}}}
	} else {
		e = &api.JSONElement{Body: &api.JSONElement_JsonObject{JsonObject: &api.JSONElement_JSONObject{CreatedAt: createdAt}}}
	}
	b, err := proto.Marshal(e)
	if err != nil {
		panic(err)
	}
	return &api.JSONElementSimple{Type: t, CreatedAt: createdAt, Value: b}
}

func counterValue(createdAt *api.TimeTicket, t api.ValueType, v []byte) *api.JSONElementSimple {
	return &api.JSONElementSimple{Type: t, CreatedAt: createdAt, Value: v}
}

func setOpPB(parent *api.TimeTicket, key string, value *api.JSONElementSimple, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Set_{Set: &api.Operation_Set{
		ParentCreatedAt: parent, Key: key, Value: value, ExecutedAt: executedAt,
	}}}
}

func addOpPB(parent, prev *api.TimeTicket, value *api.JSONElementSimple, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Add_{Add: &api.Operation_Add{
		ParentCreatedAt: parent, PrevCreatedAt: prev, Value: value, ExecutedAt: executedAt,
	}}}
}

func moveOpPB(parent, prev, target, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Move_{Move: &api.Operation_Move{
		ParentCreatedAt: parent, PrevCreatedAt: prev, CreatedAt: target, ExecutedAt: executedAt,
	}}}
}

func removeOpPB(parent, target, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_Remove_{Remove: &api.Operation_Remove{
		ParentCreatedAt: parent, CreatedAt: target, ExecutedAt: executedAt,
	}}}
}

func increaseOpPB(parent *api.TimeTicket, value *api.JSONElementSimple, executedAt *api.TimeTicket, actor string) *api.Operation {
	return &api.Operation{Body: &api.Operation_Increase_{Increase: &api.Operation_Increase{
		ParentCreatedAt: parent, Value: value, ExecutedAt: executedAt, Actor: actor,
	}}}
}

func arraySetOpPB(parent, target *api.TimeTicket, value *api.JSONElementSimple, executedAt *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_ArraySet_{ArraySet: &api.Operation_ArraySet{
		ParentCreatedAt: parent, CreatedAt: target, Value: value, ExecutedAt: executedAt,
	}}}
}
