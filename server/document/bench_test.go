package document

import (
	"encoding/base64"
	"strconv"
	"testing"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

const benchElements = 10000

// benchDoc builds a document with an object "o" of benchElements keys and an array "l" of
// benchElements integers (element i created at lamport 3+i), and returns it with the next
// free lamport.
func benchDoc(b *testing.B) (*Document, int64) {
	b.Helper()
	d := New()
	ops := []*api.Operation{
		setOpPB(rootTicket(), "o", containerValue(tk(1, 1, actorA), false), tk(1, 1, actorA)),
		setOpPB(rootTicket(), "l", containerValue(tk(2, 1, actorA), true), tk(2, 1, actorA)),
	}
	prev := rootTicket()
	for i := 0; i < benchElements; i++ {
		at := tk(int64(3+i), 1, actorA)
		ops = append(ops, addOpPB(tk(2, 1, actorA), prev, intValue(at, int32(i)), at))
		prev = at
		kt := tk(int64(3+i), 2, actorA)
		ops = append(ops, setOpPB(tk(1, 1, actorA), "k"+strconv.Itoa(i), intValue(kt, int32(i)), kt))
	}
	next := int64(3 + benchElements)
	if err := d.ApplyChanges([]*api.Change{change(actorA, 1, next-1, ops...)}); err != nil {
		b.Fatal(err)
	}
	return d, next
}

// benchApply measures ApplyChanges of one one-operation change, decoding included.
func benchApply(b *testing.B, op func(i int, lamport int64) *api.Operation) {
	d, next := benchDoc(b)
	changes := make([]*api.Change, b.N)
	for i := range changes {
		l := next + int64(i)
		changes[i] = change(actorB, uint32(i+1), l, op(i, l))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.ApplyChanges(changes[i : i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

func elemTicket(i int) *api.TimeTicket { return tk(int64(3+i%benchElements), 1, actorA) }

func BenchmarkApplySetOverwrite10k(b *testing.B) {
	benchApply(b, func(i int, l int64) *api.Operation {
		return setOpPB(tk(1, 1, actorA), "k"+strconv.Itoa(i*7919%benchElements), stringValue(tk(l, 1, actorB), "value"), tk(l, 1, actorB))
	})
}

func BenchmarkApplyAddToArray10k(b *testing.B) {
	benchApply(b, func(i int, l int64) *api.Operation {
		return addOpPB(tk(2, 1, actorA), elemTicket(i*7919), intValue(tk(l, 1, actorB), 1), tk(l, 1, actorB))
	})
}

func BenchmarkApplyMoveInArray10k(b *testing.B) {
	benchApply(b, func(i int, l int64) *api.Operation {
		return moveOpPB(tk(2, 1, actorA), elemTicket(i*7919+1), elemTicket(i*104729), tk(l, 1, actorB))
	})
}

func BenchmarkApplyRemoveFromArray10k(b *testing.B) {
	benchApply(b, func(i int, l int64) *api.Operation {
		return removeOpPB(tk(2, 1, actorA), elemTicket(i*7919), tk(l, 1, actorB))
	})
}

func BenchmarkApplyArraySet10k(b *testing.B) {
	benchApply(b, func(i int, l int64) *api.Operation {
		return arraySetOpPB(tk(2, 1, actorA), elemTicket(i*7919), intValue(tk(l, 1, actorB), 2), tk(l, 1, actorB))
	})
}

func BenchmarkApplyIncrease(b *testing.B) {
	d, next := benchDoc(b)
	c := change(actorA, 1, next, setOpPB(rootTicket(), "c", counterValue(tk(next, 1, actorA), api.ValueType_VALUE_TYPE_INTEGER_CNT, []byte{0, 0, 0, 0}), tk(next, 1, actorA)))
	if err := d.ApplyChanges([]*api.Change{c}); err != nil {
		b.Fatal(err)
	}
	changes := make([]*api.Change, b.N)
	for i := range changes {
		l := next + 1 + int64(i)
		changes[i] = change(actorB, uint32(i+1), l, increaseOpPB(tk(next, 1, actorA), intValue(tk(l, 1, actorB), 1), tk(l, 1, actorB), ""))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.ApplyChanges(changes[i : i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshot10k(b *testing.B) {
	d, _ := benchDoc(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Snapshot(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromSnapshot10k(b *testing.B) {
	d, _ := benchDoc(b)
	snap, err := d.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := FromSnapshot(snap); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSON10k(b *testing.B) {
	d, _ := benchDoc(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = d.JSON()
	}
}

// BenchmarkApplySetWith50Actors applies one-set changes whose vectors name 50 actors, as in
// a document many clients have edited.
func BenchmarkApplySetWith50Actors(b *testing.B) {
	d, next := benchDoc(b)
	vv := VersionVectorToPB(nil)
	for i := 0; i < 50; i++ {
		vv.Vector[base64Actor(byte(i+10))] = next
	}
	changes := make([]*api.Change, b.N)
	for i := range changes {
		l := next + int64(i)
		changes[i] = change(actorB, uint32(i+1), l, setOpPB(tk(1, 1, actorA), "k"+strconv.Itoa(i%benchElements), intValue(tk(l, 1, actorB), 1), tk(l, 1, actorB)))
		changes[i].Id.VersionVector = vv
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.ApplyChanges(changes[i : i+1]); err != nil {
			b.Fatal(err)
		}
	}
}

func base64Actor(last byte) string {
	a := crdt.ActorID{11: last}
	return base64.StdEncoding.EncodeToString(a[:])
}
