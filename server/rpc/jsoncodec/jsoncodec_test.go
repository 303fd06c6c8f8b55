package jsoncodec

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// newCodec returns a codec of the name the JS SDK asks for.
func newCodec(testing.TB) *Codec { return New(Config{Name: Name}) }

// codecMessages lists every message of the Yorkie API, requests first.
func codecMessages() []protoreflect.MessageDescriptor {
	var out []protoreflect.MessageDescriptor
	var add func(protoreflect.MessageDescriptors)
	add = func(mds protoreflect.MessageDescriptors) {
		for i := range mds.Len() {
			md := mds.Get(i)
			if md.IsMapEntry() {
				continue
			}
			out = append(out, md)
			add(md.Messages())
		}
	}
	add(api.File_yorkie_v1_yorkie_proto.Messages())
	add(api.File_yorkie_v1_resources_proto.Messages())
	return out
}

// newMessage returns an empty message of the generated type of md.
func newMessage(t testing.TB, md protoreflect.MessageDescriptor) proto.Message {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		t.Fatalf("find type %s: %v", md.FullName(), err)
	}
	return mt.New().Interface()
}

// decodeBoth decodes in with the fast path and with protojson. fast reports
// whether the fast path took the input.
func decodeBoth(t testing.TB, c *Codec, md protoreflect.MessageDescriptor, in []byte) (fast bool, got, want proto.Message, wantErr error) {
	got, want = newMessage(t, md), newMessage(t, md)
	fast = c.unmarshalFast(in, got)
	wantErr = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(in, want)
	return fast, got, want, wantErr
}

// checkAgree fails the test if the fast path took input that protojson
// rejects or decodes differently, and returns whether it took it.
func checkAgree(t testing.TB, c *Codec, md protoreflect.MessageDescriptor, in []byte) bool {
	t.Helper()
	fast, got, want, wantErr := decodeBoth(t, c, md, in)
	if !fast {
		return false
	}
	if wantErr != nil {
		t.Fatalf("%s: fast path took %q, protojson rejects it: %v", md.FullName(), in, wantErr)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("%s: fast path decoded %q as\n%v\nprotojson as\n%v", md.FullName(), in, got, want)
	}
	return true
}

// randomMessage fills a message of md with random fields, nested up to depth.
func randomMessage(r *rand.Rand, md protoreflect.MessageDescriptor, depth int) proto.Message {
	m := dynamicpb.NewMessage(md)
	populate(r, m, depth)
	return m
}

var trickyStrings = []string{
	"", "a", "key", `"`, `\`, "/", "\x00", "\x1f", "\t\n\r\b\f", "\u007f", "é", "\u2028\u2029",
	"😀", "<>&", "\ufffd", "日本語", "a\"b\\c", "[x]", "k1",
}

func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return trickyStrings[r.IntN(len(trickyStrings))]
	}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(trickyStrings[r.IntN(len(trickyStrings))])
	}
	return b.String()
}

func randomInt(r *rand.Rand) int64 {
	edges := []int64{0, 1, -1, 127, 128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, 1 << 53, -(1 << 53)}
	if r.IntN(2) == 0 {
		return edges[r.IntN(len(edges))]
	}
	return r.Int64() >> r.IntN(64)
}

func randomScalar(r *rand.Rand, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		if r.IntN(5) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(r.Int32N(100)))
		}
		return protoreflect.ValueOfEnum(values.Get(r.IntN(values.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(randomInt(r)))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(randomInt(r))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(randomInt(r)))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(randomInt(r)))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(r.NormFloat64()))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(r.NormFloat64())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(randomString(r))
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	}
	panic("unexpected kind " + fd.Kind().String())
}

func populate(r *rand.Rand, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if r.IntN(3) == 0 {
			continue
		}
		isMsg := fd.Message() != nil && !fd.IsMap()
		if isMsg && depth <= 0 {
			continue
		}
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for range r.IntN(4) {
				if isMsg {
					el := list.NewElement()
					populate(r, el.Message(), depth-1)
					list.Append(el)
				} else {
					list.Append(randomScalar(r, fd))
				}
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range r.IntN(4) {
				key := randomScalar(r, fd.MapKey()).MapKey()
				if fd.MapValue().Message() != nil {
					if depth <= 0 {
						continue
					}
					v := mp.NewValue()
					populate(r, v.Message(), depth-1)
					mp.Set(key, v)
				} else {
					mp.Set(key, randomScalar(r, fd.MapValue()))
				}
			}
		case isMsg:
			populate(r, m.Mutable(fd).Message(), depth-1)
		default:
			m.Set(fd, randomScalar(r, fd))
		}
	}
}

// marshalOptions are the protojson spellings a client may send.
var marshalOptions = []protojson.MarshalOptions{
	{},
	{UseProtoNames: true},
	{UseEnumNumbers: true},
	{EmitUnpopulated: true},
	{EmitDefaultValues: true},
	{Multiline: true, Indent: "\t"},
}

// reencode rewrites JSON as encoding/json spells it: other escapes
// (\u003c for <) and sorted keys.
func reencode(t testing.TB, in []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", in, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return out
}

// hasWellKnown reports whether md reaches a google.protobuf type, which the
// fast path leaves to protojson.
func hasWellKnown(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.ParentFile().Package() == "google.protobuf" {
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.FloatKind || fd.Kind() == protoreflect.DoubleKind {
			return true
		}
		if m := fd.Message(); m != nil && hasWellKnown(m, seen) {
			return true
		}
	}
	return false
}

// TestJSONCodecMatchesProtojson decodes random messages of every API type,
// written in every protojson spelling, with both decoders: the fast path must
// agree with protojson, and must take the canonical spellings of every type
// without well-known types or floats.
func TestJSONCodecMatchesProtojson(t *testing.T) {
	c := newCodec(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, md := range codecMessages() {
		simple := !hasWellKnown(md, map[protoreflect.FullName]bool{})
		taken, total := 0, 0
		for i := range 200 {
			m := randomMessage(r, md, 1+i%5)
			for _, opts := range marshalOptions {
				in, err := opts.Marshal(m)
				if err != nil {
					continue // a random Timestamp out of range
				}
				total++
				if checkAgree(t, c, md, in) {
					taken++
				} else if simple && opts.Indent == "" {
					t.Fatalf("%s: fast path refused protojson's %q", md.FullName(), in)
				}
				checkAgree(t, c, md, reencode(t, in))
			}
		}
		t.Logf("%s: fast path took %d of %d", md.FullName(), taken, total)
	}
}

// TestJSONCodecEdgeCases feeds spellings protojson treats specially; the fast
// path must agree wherever it takes one, and take the common ones.
func TestJSONCodecEdgeCases(t *testing.T) {
	c := newCodec(t)
	pushPull := (&api.PushPullChangesRequest{}).ProtoReflect().Descriptor()
	change := (&api.Change{}).ProtoReflect().Descriptor()
	op := (&api.Operation{}).ProtoReflect().Descriptor()
	checkpoint := (&api.Checkpoint{}).ProtoReflect().Descriptor()
	vv := (&api.VersionVector{}).ProtoReflect().Descriptor()
	cases := []struct {
		md   protoreflect.MessageDescriptor
		in   string
		fast bool // the fast path must take it
	}{
		{pushPull, `{}`, true},
		{pushPull, ` { } `, true},
		{pushPull, `{"clientId":"abc"}`, true},
		{pushPull, `{"client_id":"abc"}`, true},
		{pushPull, `{"clientId":"abc","client_id":"abc"}`, false},
		{pushPull, `{"clientId":"abc","clientId":"abc"}`, false},
		{pushPull, `{"clientId":null}`, true},
		{pushPull, `{"clientId":null,"clientId":"a"}`, false},
		{pushPull, `{"clientId":"a\u0062\n\"\\\/"}`, true},
		{pushPull, `{"clientId":"\ud83d\ude00"}`, true},
		{pushPull, `{"clientId":"\ud83d"}`, false},
		{pushPull, `{"clientId":"\ude00\ud83d"}`, false},
		{pushPull, `{"clientId":"\ud83dx"}`, false},
		{pushPull, `{"clientId":"\u00zz"}`, false},
		{pushPull, "{\"clientId\":\"\xff\"}", false},
		{pushPull, "{\"clientId\":\"\x01\"}", false},
		{pushPull, `{"cl\u0069entId":"x"}`, true},
		{pushPull, `{"clientId":"x",}`, false},
		{pushPull, `{"clientId":"x"} x`, false},
		{pushPull, `{"clientId":"x"}}`, false},
		{pushPull, `{"clientId":1}`, false},
		{pushPull, `{"unknown":{"a":[1,true,null,"x",{}]}}`, true},
		{pushPull, `{"unknown":1.5}`, false},
		{pushPull, `{"[ext]":1}`, false},
		{pushPull, `{"pushOnly":true}`, true},
		{pushPull, `{"pushOnly":truex}`, false},
		{pushPull, `{"pushOnly":"true"}`, false},
		{pushPull, `{"changePack":null}`, true},
		{pushPull, `{"changePack":{"changes":null}}`, true},
		{pushPull, `{"changePack":{"changes":[]}}`, true},
		{pushPull, `{"changePack":{"changes":[null]}}`, false},
		{pushPull, `{"changePack":{"snapshot":"AAEC"}}`, true},
		{pushPull, `{"changePack":{"snapshot":"AAE"}}`, true},
		{pushPull, `{"changePack":{"snapshot":"-_8"}}`, true},
		{pushPull, `{"changePack":{"snapshot":"A==="}}`, false},
		{pushPull, `{"changePack":{"snapshot":"` + strings.Repeat("QUJD", 100) + `"}}`, true},
		{checkpoint, `{"serverSeq":"12","clientSeq":3}`, true},
		{checkpoint, `{"serverSeq":12,"clientSeq":"3"}`, true},
		{checkpoint, `{"serverSeq":"-12"}`, true},
		{checkpoint, `{"serverSeq":" 12"}`, false},
		{checkpoint, `{"serverSeq":"1e2"}`, false},
		{checkpoint, `{"serverSeq":1e2}`, false},
		{checkpoint, `{"serverSeq":1.0}`, false},
		{checkpoint, `{"serverSeq":-0}`, false},
		{checkpoint, `{"serverSeq":012}`, false},
		{checkpoint, `{"serverSeq":"9223372036854775807"}`, true},
		{checkpoint, `{"serverSeq":"9223372036854775808"}`, false},
		{checkpoint, `{"serverSeq":"-9223372036854775808"}`, true},
		{checkpoint, `{"clientSeq":4294967295}`, true},
		{checkpoint, `{"clientSeq":4294967296}`, false},
		{checkpoint, `{"clientSeq":-1}`, false},
		{vv, `{"vector":{"a":"1","b":2}}`, true},
		{vv, `{"vector":{"a":"1","a":2}}`, false},
		{vv, `{"vector":{"a":1,"\u0061":2}}`, false},
		{vv, `{"vector":{"a":null}}`, false},
		{vv, `{"vector":{}}`, true},
		{change, `{"operations":[{"set":{"key":"k"}},{"add":{}}]}`, true},
		{change, `{"operations":[{"set":{},"add":{}}]}`, false},
		{change, `{"operations":[{"set":null,"add":{}}]}`, true},
		{op, `{"set":{"value":{"type":"VALUE_TYPE_INTEGER"}}}`, true},
		{op, `{"set":{"value":{"type":3}}}`, true},
		{op, `{"set":{"value":{"type":"NO_SUCH_TYPE"}}}`, false},
		{op, `{"set":{"value":{"type":"3"}}}`, false},
	}
	for _, tc := range cases {
		took := checkAgree(t, c, tc.md, []byte(tc.in))
		if tc.fast && !took {
			t.Errorf("%s: fast path refused %s", tc.md.FullName(), tc.in)
		}
		// Through the codec, the answer is always protojson's.
		got, want := newMessage(t, tc.md), newMessage(t, tc.md)
		err := c.Unmarshal([]byte(tc.in), got)
		wantErr := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal([]byte(tc.in), want)
		if (err == nil) != (wantErr == nil) || (err == nil && !proto.Equal(got, want)) {
			t.Errorf("%s: codec gave %v, %v; protojson %v, %v", tc.md.FullName(), got, err, want, wantErr)
		}
	}
}

// TestJSONCodecDeep leaves nesting beyond the fast path's bound to protojson.
func TestJSONCodecDeep(t *testing.T) {
	c := newCodec(t)
	md := (&api.PushPullChangesRequest{}).ProtoReflect().Descriptor()
	in := `{"x":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`
	checkAgree(t, c, md, []byte(in))
}

// FuzzJSONCodec checks that whatever the fast path takes, protojson decodes
// to the same message. The first byte picks the message type.
func FuzzJSONCodec(f *testing.F) {
	c := newCodec(f)
	mds := codecMessages()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		k := i % len(mds)
		in, err := marshalOptions[i%len(marshalOptions)].Marshal(randomMessage(r, mds[k], 3))
		if err != nil {
			continue // a random Timestamp out of range
		}
		f.Add(append([]byte{byte(k)}, in...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		checkAgree(t, c, mds[int(data[0])%len(mds)], data[1:])
	})
}

// pushPullJSON is a PushPull request with one change, as the JS SDK sends it.
func pushPullJSON(b *testing.B) []byte {
	actor := []byte{0x65, 0x1f, 0x2e, 0x3d, 0x4c, 0x5b, 0x6a, 0x79, 0x88, 0x97, 0xa6, 0xb5}
	req := &api.PushPullChangesRequest{
		ClientId:   "651f2e3d4c5b6a798897a6b5",
		DocumentId: "651f2e3d4c5b6a798897a6b6",
		ChangePack: &api.ChangePack{
			DocumentKey: "doc-1",
			Checkpoint:  &api.Checkpoint{ServerSeq: 1234, ClientSeq: 57},
			Changes: []*api.Change{{
				Id: &api.ChangeID{ClientSeq: 57, Lamport: 1290, ActorId: actor,
					VersionVector: &api.VersionVector{Vector: map[string]int64{"ZR8uPUxbanmIl6a1": 1290, "ZR8uPUxbanmIl6a2": 1288}}},
				Operations: []*api.Operation{{Body: &api.Operation_Set_{Set: &api.Operation_Set{
					ParentCreatedAt: &api.TimeTicket{ActorId: actor},
					Key:             "k57",
					Value: &api.JSONElementSimple{
						CreatedAt: &api.TimeTicket{Lamport: 1290, ActorId: actor},
						Type:      api.ValueType_VALUE_TYPE_INTEGER,
						Value:     []byte{0, 0, 0, 57},
					},
					ExecutedAt: &api.TimeTicket{Lamport: 1290, ActorId: actor},
				}}}},
			}},
			VersionVector: &api.VersionVector{Vector: map[string]int64{"ZR8uPUxbanmIl6a1": 1290, "ZR8uPUxbanmIl6a2": 1288}},
		},
	}
	in, err := protojson.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	return in
}

func BenchmarkJSONUnmarshal(b *testing.B) {
	in := pushPullJSON(b)
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var req api.PushPullChangesRequest
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(in, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("codec", func(b *testing.B) {
		c := newCodec(b)
		b.ReportAllocs()
		for range b.N {
			var req api.PushPullChangesRequest
			if err := c.Unmarshal(in, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestJSONCodecEncodesLikeProtojson writes random messages of every API type
// with both encoders: where the fast path writes one, it must be protojson's
// output byte for byte (protojson's random spaces aside), and it must write
// every type without well-known types or floats.
func TestJSONCodecEncodesLikeProtojson(t *testing.T) {
	c := newCodec(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, md := range codecMessages() {
		simple := !hasWellKnown(md, map[protoreflect.FullName]bool{})
		for i := range 300 {
			// The generated type, as the server writes it.
			wire, err := proto.Marshal(randomMessage(r, md, 1+i%5))
			if err != nil {
				t.Fatal(err)
			}
			m := newMessage(t, md)
			if err := proto.Unmarshal(wire, m); err != nil {
				t.Fatal(err)
			}
			want, wantErr := protojson.Marshal(m)
			got, ok := c.marshalFast([]byte("prefix"), m)
			if !ok {
				if simple && wantErr == nil {
					t.Fatalf("%s: fast path refused %v", md.FullName(), m)
				}
				continue
			}
			if wantErr != nil {
				t.Fatalf("%s: fast path wrote %s, protojson fails: %v", md.FullName(), got, wantErr)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, want); err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+compact.String() {
				t.Fatalf("%s:\nfast:      %s\nprotojson: %s", md.FullName(), got[len("prefix"):], compact.Bytes())
			}
		}
	}
}

// BenchmarkJSONMarshal writes the two PushPull answers of an exchange: the
// pusher's acknowledgement (checkpoint and version vector) and the puller's,
// which carries the change.
func BenchmarkJSONMarshal(b *testing.B) {
	in := pushPullJSON(b)
	var req api.PushPullChangesRequest
	if err := protojson.Unmarshal(in, &req); err != nil {
		b.Fatal(err)
	}
	ack := &api.PushPullChangesResponse{ChangePack: &api.ChangePack{
		DocumentKey:   req.ChangePack.DocumentKey,
		Checkpoint:    req.ChangePack.Checkpoint,
		VersionVector: req.ChangePack.VersionVector,
	}}
	pull := &api.PushPullChangesResponse{ChangePack: req.ChangePack}
	for _, answer := range []struct {
		name string
		msg  *api.PushPullChangesResponse
	}{{"ack", ack}, {"pull", pull}} {
		b.Run(answer.name+"/protojson", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := protojson.Marshal(answer.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(answer.name+"/codec", func(b *testing.B) {
			c := newCodec(b)
			b.ReportAllocs()
			for range b.N {
				if _, err := c.Marshal(answer.msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
