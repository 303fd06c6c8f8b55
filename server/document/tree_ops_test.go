package document

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
)

var treeTestActor = crdt.ActorID{11: 1}

func tt(lamport int64, delim uint32) *api.TimeTicket {
	return &api.TimeTicket{Lamport: lamport, Delimiter: delim, ActorId: treeTestActor[:]}
}

func tid(lamport int64, delim uint32, offset int32) *api.TreeNodeID {
	return &api.TreeNodeID{CreatedAt: tt(lamport, delim), Offset: offset}
}

// treeDocPB is <doc><p>text</p>...</doc> created at lamport 1: the root at delimiter 1, then
// each p and its text.
func treeDocPB(paragraphs int, text string) *api.JSONElement_Tree {
	pb := &api.JSONElement_Tree{CreatedAt: tt(1, 0)}
	d := uint32(1)
	for i := 0; i < paragraphs; i++ {
		pb.Nodes = append(pb.Nodes,
			&api.TreeNode{Id: tid(1, d+2, 0), Type: "text", Value: text, Depth: 2},
			&api.TreeNode{Id: tid(1, d+1, 0), Type: "p", Depth: 1})
		d += 2
	}
	pb.Nodes = append(pb.Nodes, &api.TreeNode{Id: tid(1, 1, 0), Type: "doc"})
	return pb
}

// newTreeDoc returns a root holding a tree under key "t" and a number under "n".
func newTreeDoc(t testing.TB, pb *api.JSONElement_Tree) (*crdt.Root, *crdt.Tree) {
	t.Helper()
	tree, err := treeFromPB(pb)
	if err != nil {
		t.Fatal(err)
	}
	obj := crdt.NewObject(crdt.InitialTicket)
	obj.Set("t", tree, tree.CreatedAt())
	root := crdt.NewRoot(obj)
	return root, tree
}

func treeEditPB(from, to *api.TreePos, contents []*api.TreeNodes, split int32, at *api.TimeTicket) *api.Operation {
	return &api.Operation{Body: &api.Operation_TreeEdit_{TreeEdit: &api.Operation_TreeEdit{
		ParentCreatedAt: tt(1, 0), From: from, To: to, Contents: contents, SplitLevel: split, ExecutedAt: at,
	}}}
}

func runOp(root *crdt.Root, op *api.Operation, vv crdt.VersionVector) error {
	o, err := decodeOperation(op)
	if err != nil {
		return err
	}
	return o.Execute(root, vv)
}

// inText is the position after the first character of paragraph i's text.
func inText(i int) *api.TreePos {
	return &api.TreePos{ParentId: tid(1, uint32(2+2*i), 0), LeftSiblingId: tid(1, uint32(3+2*i), 1)}
}

func TestTreeOpsApplyAndRefuse(t *testing.T) {
	root, tree := newTreeDoc(t, treeDocPB(2, "ab"))
	text := []*api.TreeNodes{{Content: []*api.TreeNode{{Id: tid(2, 1, 0), Type: "text", Value: "X"}}}}
	if err := runOp(root, treeEditPB(inText(0), inText(0), text, 0, tt(2, 1)), nil); err != nil {
		t.Fatal(err)
	}
	if got, want := string(tree.JSON(nil)), `{"type":"doc","children":[{"type":"p","children":[{"type":"text","value":"a"},{"type":"text","value":"X"},{"type":"text","value":"b"}]},{"type":"p","children":[{"type":"text","value":"ab"}]}]}`; got != want {
		t.Fatalf("JSON %s", got)
	}

	other := crdt.NewObject(tt2(5))
	root.Object().(*crdt.Object).Set("o", other, tt2(5))
	root.RegisterElement(other, root.Object())

	bad := &api.TreePos{ParentId: tid(9, 9, 0), LeftSiblingId: tid(9, 9, 0)}
	cases := map[string]struct {
		op   *api.Operation
		want error
	}{
		"unknown tree": {&api.Operation{Body: &api.Operation_TreeEdit_{TreeEdit: &api.Operation_TreeEdit{
			ParentCreatedAt: tt(7, 7), From: inText(0), To: inText(0), ExecutedAt: tt(3, 1)}}}, ErrElementNotFound},
		"not a tree": {&api.Operation{Body: &api.Operation_TreeStyle_{TreeStyle: &api.Operation_TreeStyle{
			ParentCreatedAt: tt(5, 0), From: inText(0), To: inText(0), ExecutedAt: tt(3, 1)}}}, ErrWrongElementType},
		"no from":           {treeEditPB(nil, inText(0), nil, 0, tt(3, 1)), ErrInvalidOperation},
		"no left sibling":   {treeEditPB(&api.TreePos{ParentId: tid(1, 2, 0)}, inText(0), nil, 0, tt(3, 1)), ErrInvalidOperation},
		"short actor":       {treeEditPB(inText(0), inText(0), nil, 0, &api.TimeTicket{Lamport: 3, ActorId: []byte{1}}), ErrInvalidOperation},
		"no executed_at":    {treeEditPB(inText(0), inText(0), nil, 0, nil), ErrInvalidOperation},
		"position unknown":  {treeEditPB(bad, bad, nil, 0, tt(3, 1)), ErrElementNotFound},
		"split past root":   {treeEditPB(inText(0), inText(0), nil, 3, tt(3, 1)), ErrInvalidOperation},
		"empty content":     {treeEditPB(inText(0), inText(0), []*api.TreeNodes{{}}, 0, tt(3, 1)), ErrInvalidOperation},
		"content no id":     {treeEditPB(inText(0), inText(0), []*api.TreeNodes{{Content: []*api.TreeNode{{Type: "text"}}}}, 0, tt(3, 1)), ErrInvalidOperation},
		"content bad depth": {treeEditPB(inText(0), inText(0), []*api.TreeNodes{{Content: []*api.TreeNode{{Id: tid(3, 1, 0), Type: "text", Depth: 3}, {Id: tid(3, 2, 0), Type: "p", Depth: 1}}}}, 0, tt(3, 1)), ErrInvalidOperation},
		"child of text":     {treeEditPB(inText(0), inText(0), []*api.TreeNodes{{Content: []*api.TreeNode{{Id: tid(3, 1, 0), Type: "p", Depth: 1}, {Id: tid(3, 2, 0), Type: "text"}}}}, 0, tt(3, 1)), ErrInvalidOperation},
		"attribute not JSON": {treeEditPB(inText(0), inText(0), []*api.TreeNodes{{Content: []*api.TreeNode{{Id: tid(3, 1, 0), Type: "p",
			Attributes: map[string]*api.NodeAttr{"a": {Value: "bold", UpdatedAt: tt(3, 1)}}}}}}, 0, tt(3, 1)), ErrInvalidOperation},
		"style not JSON": {&api.Operation{Body: &api.Operation_TreeStyle_{TreeStyle: &api.Operation_TreeStyle{
			ParentCreatedAt: tt(1, 0), From: inText(0), To: inText(0), ExecutedAt: tt(3, 1),
			Attributes: map[string]string{"a": "{"}}}}, ErrInvalidOperation},
	}
	for name, c := range cases {
		if err := runOp(root, c.op, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func tt2(lamport int64) crdt.Ticket { return crdt.Ticket{Lamport: lamport, Actor: treeTestActor} }

func TestTreeFromBytesUsesTheTreesOwnTicket(t *testing.T) {
	b, err := proto.Marshal(&api.JSONElement{Body: &api.JSONElement_Tree_{Tree: treeDocPB(1, "a")}})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := treeFromBytes(b, tt2(42))
	if err != nil {
		t.Fatal(err)
	}
	if tree.CreatedAt() != tt2(1) {
		t.Fatalf("created at %v", tree.CreatedAt())
	}
	for name, v := range map[string][]byte{"empty": nil, "garbage": {0xff, 0xff}, "not a tree": mustMarshal(t, &api.JSONElement{})} {
		if _, err := treeFromBytes(v, tt2(1)); !errors.Is(err, ErrInvalidOperation) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzTreeOps runs edits and styles with positions, split levels and contents drawn from the
// input against a small tree: whatever they name, they apply or are refused with a sentinel,
// and never panic.
func FuzzTreeOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{3, 3, 3, 1, 0, 200, 7, 7, 1, 1, 9, 4, 4, 4, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		root, _ := newTreeDoc(t, treeDocPB(3, "abc"))
		next := func() int {
			if len(in) == 0 {
				return 0
			}
			v := int(in[0])
			in = in[1:]
			return v
		}
		id := func() *api.TreeNodeID {
			// Mostly nodes the tree holds (delimiters 1..7), sometimes others.
			return tid(int64(1+next()%3), uint32(next()%9), int32(next()%5-1))
		}
		pos := func() *api.TreePos { return &api.TreePos{ParentId: id(), LeftSiblingId: id()} }
		for lamport := int64(2); len(in) > 0 && lamport < 40; lamport++ {
			at := tt(lamport, 1)
			var vv crdt.VersionVector
			if next()%2 == 0 {
				vv = crdt.VersionVector{treeTestActor: int64(next() % int(lamport+1))}
			}
			var op *api.Operation
			switch next() % 4 {
			case 0:
				var contents []*api.TreeNodes
				if next()%2 == 0 {
					contents = []*api.TreeNodes{{Content: []*api.TreeNode{
						{Id: tid(lamport, 2, 0), Type: "text", Value: "zz", Depth: int32(next() % 3)},
						{Id: tid(lamport, 3, 0), Type: []string{"p", "text"}[next()%2], Depth: int32(next() % 2)},
					}}}
				}
				op = treeEditPB(pos(), pos(), contents, int32(next()%4-1), at)
			case 1:
				op = treeEditPB(pos(), pos(), nil, 0, at)
			case 2:
				op = &api.Operation{Body: &api.Operation_TreeStyle_{TreeStyle: &api.Operation_TreeStyle{
					ParentCreatedAt: tt(1, 0), From: pos(), To: pos(), ExecutedAt: at,
					Attributes: map[string]string{"k": fmt.Sprint(next())}}}}
			default:
				op = &api.Operation{Body: &api.Operation_TreeStyle_{TreeStyle: &api.Operation_TreeStyle{
					ParentCreatedAt: tt(1, 0), From: pos(), To: pos(), ExecutedAt: at,
					AttributesToRemove: []string{"k"}}}}
			}
			err := runOp(root, op, vv)
			if err != nil && !errors.Is(err, ErrInvalidOperation) && !errors.Is(err, ErrElementNotFound) {
				t.Fatalf("refusal without a sentinel: %v", err)
			}
			_ = root.JSON()
			if next()%5 == 0 {
				root.GarbageCollect(crdt.VersionVector{treeTestActor: lamport})
			}
		}
	})
}

// BenchmarkTreeEdit measures one typical change on the server: a character typed into one
// of 5,000 paragraphs of a tree of 10,001 nodes.
func BenchmarkTreeEdit(b *testing.B) {
	const paragraphs = 5000
	root, tree := newTreeDoc(b, treeDocPB(paragraphs, "hello"))
	if tree.NodeCount() != 2*paragraphs+1 {
		b.Fatalf("nodes %d", tree.NodeCount())
	}
	ops := make([]Operation, b.N)
	for i := range ops {
		p := (i * 7919) % paragraphs
		o, err := decodeOperation(treeEditPB(inText(p), inText(p),
			[]*api.TreeNodes{{Content: []*api.TreeNode{{Id: tid(int64(2+i), 1, 0), Type: "text", Value: "x"}}}},
			0, tt(int64(2+i), 1)))
		if err != nil {
			b.Fatal(err)
		}
		ops[i] = o
	}
	runTreeOps(b, root, ops)
}

// runTreeOps executes ops as consecutive changes and reports, beside wall time, the process's
// CPU time per operation, which a busy machine does not inflate.
func runTreeOps(b *testing.B, root *crdt.Root, ops []Operation) {
	vv := crdt.VersionVector{treeTestActor: 1}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime(b)
	for i, o := range ops {
		vv[treeTestActor] = int64(2 + i)
		if err := o.Execute(root, vv); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(len(ops)), "cpu-ns/op")
}

func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkTreeDelete measures deleting a character of one of 5,000 paragraphs.
func BenchmarkTreeDelete(b *testing.B) {
	const paragraphs = 5000
	root, _ := newTreeDoc(b, treeDocPB(paragraphs, "hello world, hello world, hello world"))
	ops := make([]Operation, b.N)
	for i := range ops {
		p := (i * 7919) % paragraphs
		k := int32(1 + (i/paragraphs)%30)
		from := &api.TreePos{ParentId: tid(1, uint32(2+2*p), 0), LeftSiblingId: tid(1, uint32(3+2*p), k)}
		to := &api.TreePos{ParentId: tid(1, uint32(2+2*p), 0), LeftSiblingId: tid(1, uint32(3+2*p), k+1)}
		o, err := decodeOperation(treeEditPB(from, to, nil, 0, tt(int64(2+i), 1)))
		if err != nil {
			b.Fatal(err)
		}
		ops[i] = o
	}
	runTreeOps(b, root, ops)
}

// BenchmarkTreeStyle measures styling one of 5,000 paragraphs.
func BenchmarkTreeStyle(b *testing.B) {
	const paragraphs = 5000
	root, _ := newTreeDoc(b, treeDocPB(paragraphs, "hello"))
	ops := make([]Operation, b.N)
	for i := range ops {
		p := (i * 7919) % paragraphs
		// From before the paragraph to inside it: its start token.
		from := &api.TreePos{ParentId: tid(1, 1, 0), LeftSiblingId: tid(1, uint32(2*p), 0)}
		if p == 0 {
			from.LeftSiblingId = tid(1, 1, 0)
		}
		to := &api.TreePos{ParentId: tid(1, uint32(2+2*p), 0), LeftSiblingId: tid(1, uint32(2+2*p), 0)}
		o, err := decodeOperation(&api.Operation{Body: &api.Operation_TreeStyle_{TreeStyle: &api.Operation_TreeStyle{
			ParentCreatedAt: tt(1, 0), From: from, To: to, ExecutedAt: tt(int64(2+i), 1),
			Attributes: map[string]string{"bold": "true"}}}})
		if err != nil {
			b.Fatal(err)
		}
		ops[i] = o
	}
	runTreeOps(b, root, ops)
}
