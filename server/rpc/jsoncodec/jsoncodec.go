// Package jsoncodec is a Connect codec for JSON that decodes and encodes as
// protojson does (connect's default JSON codec), only faster: it transcodes
// between JSON and the protobuf wire format and leaves building and reading
// messages to the generated binary code. Whatever it is not sure of goes to
// protojson, so results and errors are protojson's.
package jsoncodec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Codec is connect's protojson codec with faster paths. protojson decodes
// through protoreflect, one reflective Set per field, which made it the
// largest single cost of a PushPull from the JS SDK. The fast decoder
// transcodes the JSON to the protobuf wire format, driven by a per-message
// table of fields, and lets the generated binary decoder build the message;
// the fast encoder marshals to the wire format and transcodes that to JSON.
//
// It only takes input whose meaning it is sure of: the canonical forms
// protojson and protobuf-es write. On anything else (floats, exponents,
// unknown enum names, well-known types, extensions, malformed JSON...) it
// gives up and protojson decodes the input from scratch, so the result, and
// every error, is protojson's. Tests check the two agree. A Codec is safe
// for concurrent use.
type Codec struct {
	name    string
	schemas sync.Map // protoreflect.FullName -> *msgSchema
	pool    sync.Pool
}

// The names under which the Connect protocol asks for JSON.
const (
	// Name is the codec name of "application/json".
	Name = "json"
	// NameUTF8 is the codec name of "application/json; charset=utf-8".
	NameUTF8 = "json; charset=utf-8"
)

// Config configures a Codec.
type Config struct {
	// Name is the codec's name, the content subtype it serves: Name,
	// NameUTF8 or another of connect's names for JSON ("": Name).
	Name string
}

// New returns a codec serving cfg.Name. Each codec keeps its own cache of
// message schemas, built on first use of each type.
func New(cfg Config) *Codec {
	name := cfg.Name
	if name == "" {
		name = Name
	}
	return &Codec{name: name}
}

// Name returns the codec name given in its Config.
func (c *Codec) Name() string { return c.name }

// IsBinary reports false: JSON is text.
func (c *Codec) IsBinary() bool { return false }

// Marshal writes message, a proto.Message, as protojson does.
func (c *Codec) Marshal(message any) ([]byte, error) {
	return c.MarshalAppend(nil, message)
}

// MarshalAppend appends message, a proto.Message, to dst as protojson does.
func (c *Codec) MarshalAppend(dst []byte, message any) ([]byte, error) {
	m, ok := message.(proto.Message)
	if !ok {
		return nil, errNotProto(message)
	}
	if out, ok := c.marshalFast(dst, m); ok {
		return out, nil
	}
	return protojson.MarshalOptions{}.MarshalAppend(dst, m)
}

// marshalFast writes m as protojson does, compactly, by marshaling it to
// the wire format (with map keys sorted, as protojson sorts them) and
// transcoding that. It reports false where protojson must write it.
func (c *Codec) marshalFast(dst []byte, m proto.Message) ([]byte, bool) {
	s := c.schema(m.ProtoReflect().Descriptor())
	e, _ := c.pool.Get().(*transcoder)
	if e == nil {
		e = &transcoder{}
	}
	defer c.pool.Put(e)
	wire, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(e.scratch[:0], m)
	if err != nil {
		return nil, false
	}
	if cap(wire) <= maxPooledBuffer {
		e.scratch = wire
	}
	out, ok := encodeMessage(dst, s, wire)
	if !ok {
		return nil, false
	}
	return out, true
}

// MarshalStable is Marshal without protojson's randomised whitespace, for
// connect's stableCodec (it spells GET requests with it).
func (c *Codec) MarshalStable(message any) ([]byte, error) {
	out, err := c.Marshal(message)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		return nil, fmt.Errorf("compact json: %w", err)
	}
	return compact.Bytes(), nil
}

// Unmarshal decodes data into message, a proto.Message, as protojson does
// with unknown fields discarded.
func (c *Codec) Unmarshal(data []byte, message any) error {
	m, ok := message.(proto.Message)
	if !ok {
		return errNotProto(message)
	}
	if len(data) == 0 {
		return errors.New("zero-length payload is not a valid JSON object")
	}
	if c.unmarshalFast(data, m) {
		return nil
	}
	// Unknown fields are discarded, as connect's own codec does, so clients
	// and servers need not share exactly one schema version.
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m); err != nil {
		return fmt.Errorf("unmarshal into %T: %w", message, err)
	}
	return nil
}

func errNotProto(message any) error {
	return fmt.Errorf("%T doesn't implement proto.Message", message)
}

// unmarshalFast decodes data into m and reports whether it could.
func (c *Codec) unmarshalFast(data []byte, m proto.Message) bool {
	s := c.schema(m.ProtoReflect().Descriptor())
	t, _ := c.pool.Get().(*transcoder)
	if t == nil {
		t = &transcoder{}
	}
	defer func() {
		if cap(t.out) > maxPooledBuffer {
			t.out = nil
		}
		c.pool.Put(t)
	}()
	t.reset(data)
	if !t.message(s) {
		return false
	}
	t.space()
	if t.pos != len(t.in) {
		return false
	}
	return proto.Unmarshal(t.out, m) == nil
}

// maxPooledBuffer is the largest buffer kept for reuse; a rare huge message
// should not pin its memory.
const maxPooledBuffer = 64 << 10

// maxFastDepth bounds the nesting the fast decoder follows; deeper input is
// left to protojson and its own limit.
const maxFastDepth = 64

// msgSchema is what the fast decoder knows of one message type.
type msgSchema struct {
	// byName finds a field by its JSON name or, failing that, its proto name,
	// as protojson looks them up.
	byName map[string]*fieldSchema
	// byNum finds a field by number, for the encoder; fields lists them in
	// declaration order.
	byNum  map[protowire.Number]*fieldSchema
	fields []*fieldSchema
	// unsupported: a well-known type (with its own JSON form), or too many
	// fields for the duplicate check.
	unsupported bool
}

// fieldSchema is what the fast decoder knows of one field.
type fieldSchema struct {
	num   protowire.Number
	kind  protoreflect.Kind
	index uint // bit in the message's set of seen fields
	oneof int  // bit in the set of seen oneofs; -1 outside a oneof
	list  bool
	// mapKey and mapValue describe a map's entries (fields 1 and 2).
	mapKey, mapValue *fieldSchema
	msg              *msgSchema
	enum             map[string]int32
	enumNames        map[int32]string // the name protojson writes per number
	jsonKey          []byte           // "jsonName":
	// unsupported: a value with a JSON form of its own (a well-known type,
	// where null may mean something) or a group.
	unsupported bool
}

// schema returns the cached schema of a message type, building it on first use.
func (c *Codec) schema(md protoreflect.MessageDescriptor) *msgSchema {
	if s, ok := c.schemas.Load(md.FullName()); ok {
		return s.(*msgSchema)
	}
	s := buildSchema(md, map[protoreflect.FullName]*msgSchema{})
	actual, _ := c.schemas.LoadOrStore(md.FullName(), s)
	return actual.(*msgSchema)
}

func buildSchema(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*msgSchema) *msgSchema {
	if s, ok := seen[md.FullName()]; ok {
		return s
	}
	s := &msgSchema{byName: map[string]*fieldSchema{}, byNum: map[protowire.Number]*fieldSchema{}}
	seen[md.FullName()] = s
	fields := md.Fields()
	if md.ParentFile().Package() == "google.protobuf" || fields.Len() > 64 || md.Oneofs().Len() > 64 {
		s.unsupported = true
		return s
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		f := buildField(fd, seen)
		f.index = uint(i)
		f.jsonKey = strconv.AppendQuote(nil, fd.JSONName())
		f.jsonKey = append(f.jsonKey, ':')
		s.byName[string(fd.Name())] = f
		s.byNum[fd.Number()] = f
		s.fields = append(s.fields, f)
	}
	// JSON names win over proto names, as in protojson.
	for i := range fields.Len() {
		fd := fields.Get(i)
		s.byName[fd.JSONName()] = s.byName[string(fd.Name())]
	}
	return s
}

func buildField(fd protoreflect.FieldDescriptor, seen map[protoreflect.FullName]*msgSchema) *fieldSchema {
	f := &fieldSchema{num: fd.Number(), kind: fd.Kind(), oneof: -1, list: fd.IsList()}
	if od := fd.ContainingOneof(); od != nil {
		f.oneof = od.Index()
	}
	switch {
	case fd.IsMap():
		f.mapKey = buildField(fd.MapKey(), seen)
		f.mapValue = buildField(fd.MapValue(), seen)
		f.unsupported = f.mapValue.unsupported
	case fd.Kind() == protoreflect.GroupKind:
		f.unsupported = true
	case fd.Kind() == protoreflect.MessageKind:
		f.msg = buildSchema(fd.Message(), seen)
		f.unsupported = f.msg.unsupported
	case fd.Kind() == protoreflect.EnumKind:
		f.unsupported = fd.Enum().ParentFile().Package() == "google.protobuf"
		values := fd.Enum().Values()
		f.enum = make(map[string]int32, values.Len())
		f.enumNames = make(map[int32]string, values.Len())
		for i := range values.Len() {
			v := values.Get(i)
			f.enum[string(v.Name())] = int32(v.Number())
			if _, ok := f.enumNames[int32(v.Number())]; !ok {
				f.enumNames[int32(v.Number())] = string(v.Name())
			}
		}
	}
	return f
}

// transcoder turns protojson input into the protobuf wire format. Its
// methods return false where protojson must take over.
type transcoder struct {
	in      []byte
	pos     int
	out     []byte
	depth   int
	scratch []byte // decoded strings that had escapes
	escaped bool   // the last string read is in scratch
}

func (t *transcoder) reset(in []byte) {
	t.in, t.pos, t.out, t.depth = in, 0, t.out[:0], 0
}

// space skips the whitespace protojson allows between tokens.
func (t *transcoder) space() {
	for t.pos < len(t.in) {
		switch t.in[t.pos] {
		case ' ', '\n', '\r', '\t':
			t.pos++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte, or 0 at the end.
func (t *transcoder) next() byte {
	t.space()
	if t.pos < len(t.in) {
		return t.in[t.pos]
	}
	return 0
}

// member reads an object member's name, which must come next, and the ':'
// after it.
func (t *transcoder) member() ([]byte, bool) {
	if t.next() != '"' {
		return nil, false
	}
	name, ok := t.str()
	if !ok || t.next() != ':' {
		return nil, false
	}
	t.pos++
	return name, true
}

// after steps over what follows an element of an array or object: a comma
// (more is true) or its closing byte (ok is true). Anything else is neither.
func (t *transcoder) after(closing byte) (more, ok bool) {
	switch t.next() {
	case ',':
		t.pos++
		return true, true
	case closing:
		t.pos++
		return false, true
	}
	return false, false
}

// isNotDelim reports whether c may continue a literal or number, so that
// protojson would not see the token end before it.
func isNotDelim(c byte) bool {
	return c == '-' || c == '+' || c == '.' || c == '_' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// literal consumes word (null, true or false) if it comes next as a whole token.
func (t *transcoder) literal(word string) bool {
	end := t.pos + len(word)
	if end > len(t.in) || string(t.in[t.pos:end]) != word {
		return false
	}
	if end < len(t.in) && isNotDelim(t.in[end]) {
		return false
	}
	t.pos = end
	return true
}

// beginLen starts a length-delimited value; endLen writes its length.
func (t *transcoder) beginLen() int {
	t.out = append(t.out, 0)
	return len(t.out)
}

func (t *transcoder) endLen(start int) {
	n := len(t.out) - start
	if n < 0x80 {
		t.out[start-1] = byte(n)
		return
	}
	size := protowire.SizeVarint(uint64(n))
	t.out = append(t.out, make([]byte, size-1)...)
	copy(t.out[start-1+size:], t.out[start:start+n])
	protowire.AppendVarint(t.out[:start-1], uint64(n))
}

// message transcodes a JSON object into the fields of a message of schema s.
func (t *transcoder) message(s *msgSchema) bool {
	if s.unsupported || t.next() != '{' {
		return false
	}
	t.depth++
	if t.depth > maxFastDepth {
		return false
	}
	t.pos++
	var seen, seenOneofs uint64
	if t.next() == '}' {
		t.pos++
		t.depth--
		return true
	}
	for {
		name, ok := t.member()
		if !ok {
			return false
		}
		f := s.byName[string(name)]
		if f == nil {
			// protojson resolves [name] as an extension.
			if len(name) > 0 && name[0] == '[' {
				return false
			}
			if !t.skip(0) {
				return false
			}
		} else {
			if f.unsupported {
				return false
			}
			bit := uint64(1) << f.index
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			if t.next() == 'n' {
				// null leaves the field unset, but counts as seen.
				if !t.literal("null") {
					return false
				}
			} else {
				if f.oneof >= 0 {
					obit := uint64(1) << uint(f.oneof)
					if seenOneofs&obit != 0 {
						return false
					}
					seenOneofs |= obit
				}
				if !t.field(f) {
					return false
				}
			}
		}
		if more, ok := t.after('}'); !more {
			if ok {
				t.depth--
			}
			return ok
		}
	}
}

// field transcodes the value of a present field.
func (t *transcoder) field(f *fieldSchema) bool {
	switch {
	case f.mapKey != nil:
		return t.mapField(f)
	case f.list:
		if t.next() != '[' {
			return false
		}
		return t.elements(func() bool { return t.value(f) })
	default:
		return t.value(f)
	}
}

// elements reads a JSON array whose '[' is next, each element with elem,
// through its ']'.
func (t *transcoder) elements(elem func() bool) bool {
	t.pos++
	if t.next() == ']' {
		t.pos++
		return true
	}
	for {
		if !elem() {
			return false
		}
		if more, ok := t.after(']'); !more {
			return ok
		}
	}
}

// value transcodes one value of a singular or repeated field.
func (t *transcoder) value(f *fieldSchema) bool {
	if f.kind == protoreflect.MessageKind {
		t.out = protowire.AppendTag(t.out, f.num, protowire.BytesType)
		start := t.beginLen()
		if !t.message(f.msg) {
			return false
		}
		t.endLen(start)
		return true
	}
	return t.scalar(f)
}

// mapField transcodes a JSON object into map entries. Only string keys are
// handled; protojson parses other key kinds.
func (t *transcoder) mapField(f *fieldSchema) bool {
	if f.mapKey.kind != protoreflect.StringKind || t.next() != '{' {
		return false
	}
	t.pos++
	if t.next() == '}' {
		t.pos++
		return true
	}
	var keys [][]byte
	var keySet map[string]struct{}
	for {
		key, ok := t.member()
		if !ok {
			return false
		}
		// Duplicate keys are an error in protojson.
		if keySet != nil {
			if _, dup := keySet[string(key)]; dup {
				return false
			}
			keySet[string(key)] = struct{}{}
		} else {
			for _, k := range keys {
				if bytes.Equal(k, key) {
					return false
				}
			}
			if t.escaped {
				key = bytes.Clone(key) // the scratch is reused by the value
			}
			keys = append(keys, key)
			if len(keys) > 16 {
				keySet = make(map[string]struct{}, 2*len(keys))
				for _, k := range keys {
					keySet[string(k)] = struct{}{}
				}
			}
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.BytesType)
		start := t.beginLen()
		t.out = protowire.AppendTag(t.out, 1, protowire.BytesType)
		t.out = protowire.AppendBytes(t.out, key)
		if !t.value(f.mapValue) {
			return false
		}
		t.endLen(start)
		if more, ok := t.after('}'); !more {
			return ok
		}
	}
}

// scalar transcodes a scalar value as field f.num.
func (t *transcoder) scalar(f *fieldSchema) bool {
	switch f.kind {
	case protoreflect.StringKind:
		if t.next() != '"' {
			return false
		}
		s, ok := t.str()
		if !ok {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.BytesType)
		t.out = protowire.AppendBytes(t.out, s)
		return true
	case protoreflect.BytesKind:
		if t.next() != '"' {
			return false
		}
		s, ok := t.str()
		if !ok {
			return false
		}
		// The encoding protojson picks for the text.
		enc := base64.StdEncoding
		if bytes.ContainsAny(s, "-_") {
			enc = base64.URLEncoding
		}
		if len(s)%4 != 0 {
			enc = enc.WithPadding(base64.NoPadding)
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.BytesType)
		start := t.beginLen()
		out, err := enc.AppendDecode(t.out, s)
		if err != nil {
			return false
		}
		t.out = out
		t.endLen(start)
		return true
	case protoreflect.BoolKind:
		var v uint64
		switch {
		case t.next() == 't' && t.literal("true"):
			v = 1
		case t.next() == 'f' && t.literal("false"):
		default:
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, v)
		return true
	case protoreflect.EnumKind:
		var n int64
		if t.next() == '"' {
			name, ok := t.str()
			if !ok {
				return false
			}
			v, known := f.enum[string(name)]
			if !known {
				return false
			}
			n = int64(v)
		} else {
			var ok bool
			if n, ok = t.integer(); !ok || n != int64(int32(n)) {
				return false
			}
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, uint64(n))
		return true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, ok := t.quotedOrBare(t.integer)
		if !ok {
			return false
		}
		return t.appendSigned(f, n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, ok := t.quotedOrBare(func() (int64, bool) {
			u, ok := t.unsigned()
			return int64(u), ok
		})
		if !ok {
			return false
		}
		return t.appendUnsigned(f, uint64(n))
	}
	// Floats have spellings (NaN, exponents, rounding) left to protojson.
	return false
}

func (t *transcoder) appendSigned(f *fieldSchema, n int64) bool {
	switch f.kind {
	case protoreflect.Int32Kind:
		if n != int64(int32(n)) {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, uint64(n))
	case protoreflect.Sint32Kind:
		if n != int64(int32(n)) {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, protowire.EncodeZigZag(n))
	case protoreflect.Sfixed32Kind:
		if n != int64(int32(n)) {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.Fixed32Type)
		t.out = protowire.AppendFixed32(t.out, uint32(n))
	case protoreflect.Int64Kind:
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, uint64(n))
	case protoreflect.Sint64Kind:
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, protowire.EncodeZigZag(n))
	case protoreflect.Sfixed64Kind:
		t.out = protowire.AppendTag(t.out, f.num, protowire.Fixed64Type)
		t.out = protowire.AppendFixed64(t.out, uint64(n))
	}
	return true
}

func (t *transcoder) appendUnsigned(f *fieldSchema, n uint64) bool {
	switch f.kind {
	case protoreflect.Uint32Kind:
		if n > 1<<32-1 {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, n)
	case protoreflect.Fixed32Kind:
		if n > 1<<32-1 {
			return false
		}
		t.out = protowire.AppendTag(t.out, f.num, protowire.Fixed32Type)
		t.out = protowire.AppendFixed32(t.out, uint32(n))
	case protoreflect.Uint64Kind:
		t.out = protowire.AppendTag(t.out, f.num, protowire.VarintType)
		t.out = protowire.AppendVarint(t.out, n)
	case protoreflect.Fixed64Kind:
		t.out = protowire.AppendTag(t.out, f.num, protowire.Fixed64Type)
		t.out = protowire.AppendFixed64(t.out, n)
	}
	return true
}

// quotedOrBare reads a number protojson accepts bare or quoted (64-bit
// integers are quoted by protojson and protobuf-es). A quoted number must be
// exactly the bare form: protojson rejects surrounding space, and escapes
// are left to it.
func (t *transcoder) quotedOrBare(parse func() (int64, bool)) (int64, bool) {
	if t.next() != '"' {
		return parse()
	}
	end := bytes.IndexByte(t.in[t.pos+1:], '"')
	if end < 0 {
		return 0, false
	}
	end += t.pos + 1
	// Parse the quoted text as if it were the whole input.
	in, pos := t.in, t.pos
	t.in, t.pos = in[:end], pos+1
	n, ok := parse()
	done := t.pos == end
	t.in, t.pos = in, end+1
	return n, ok && done
}

// digits reads the digits of a JSON integer without sign: 0 or [1-9][0-9]*
// with no fraction or exponent after it, and at most 20 digits.
func (t *transcoder) digits() (uint64, bool) {
	start := t.pos
	var n uint64
	for t.pos < len(t.in) && '0' <= t.in[t.pos] && t.in[t.pos] <= '9' {
		d := uint64(t.in[t.pos] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
		t.pos++
	}
	count := t.pos - start
	if count == 0 || (count > 1 && t.in[start] == '0') {
		return 0, false
	}
	if t.pos < len(t.in) && isNotDelim(t.in[t.pos]) {
		return 0, false
	}
	return n, true
}

// integer reads a signed JSON integer; -0 is left to protojson.
func (t *transcoder) integer() (int64, bool) {
	neg := t.pos < len(t.in) && t.in[t.pos] == '-'
	if neg {
		t.pos++
	}
	u, ok := t.digits()
	if !ok {
		return 0, false
	}
	if neg {
		if u == 0 || u > 1<<63 {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// unsigned reads a JSON integer without sign.
func (t *transcoder) unsigned() (uint64, bool) {
	if t.pos >= len(t.in) || t.in[t.pos] == '-' {
		return 0, false
	}
	return t.digits()
}

// str reads the JSON string at t.pos and returns its text, valid UTF-8 as
// protojson requires. The text aliases the input or, when it had escapes,
// the transcoder's scratch buffer.
func (t *transcoder) str() ([]byte, bool) {
	start := t.pos + 1
	ascii := true
	t.escaped = false
	for i := start; i < len(t.in); i++ {
		switch c := t.in[i]; {
		case c == '"':
			s := t.in[start:i]
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			t.pos = i + 1
			return s, true
		case c == '\\':
			return t.escapedStr(start, i)
		case c < ' ':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// escapedStr decodes a string with escapes, the way protojson does,
// continuing at the first backslash esc.
func (t *transcoder) escapedStr(start, esc int) ([]byte, bool) {
	out := append(t.scratch[:0], t.in[start:esc]...)
	if !utf8.Valid(out) {
		return nil, false
	}
	in := t.in
	i := esc
	for i < len(in) {
		c := in[i]
		switch {
		case c == '"':
			t.scratch = out
			t.escaped = true
			t.pos = i + 1
			return out, true
		case c == '\\':
			if i+1 >= len(in) {
				return nil, false
			}
			switch e := in[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(in, i+2)
				if !ok {
					return nil, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					low, ok := hex4(in, i+2)
					if !ok || in[i] != '\\' || in[i+1] != 'u' {
						return nil, false
					}
					r = utf16.DecodeRune(r, low)
					if r == utf8.RuneError {
						return nil, false
					}
					i += 6
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return nil, false
			}
			i += 2
		case c < ' ':
			return nil, false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, in[i:i+n]...)
			i += n
		}
	}
	return nil, false
}

// hex4 reads the four hex digits of a \u escape at in[i:].
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// skip passes over the value of an unknown field, checking its syntax as
// protojson does; numbers other than plain integers are left to protojson.
func (t *transcoder) skip(depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	switch t.next() {
	case '"':
		_, ok := t.str()
		return ok
	case 'n':
		return t.literal("null")
	case 't':
		return t.literal("true")
	case 'f':
		return t.literal("false")
	case '{':
		t.pos++
		if t.next() == '}' {
			t.pos++
			return true
		}
		for {
			if _, ok := t.member(); !ok || !t.skip(depth+1) {
				return false
			}
			if more, ok := t.after('}'); !more {
				return ok
			}
		}
	case '[':
		return t.elements(func() bool { return t.skip(depth + 1) })
	default:
		_, ok := t.integer()
		return ok
	}
}

// encodeMessage appends the JSON object of the wire-format message b of
// schema s, fields in declaration order as protojson writes them.
func encodeMessage(out []byte, s *msgSchema, b []byte) ([]byte, bool) {
	if s.unsupported {
		return nil, false
	}
	// Where each field's occurrences lie in b; proto.Marshal writes them
	// together, and a singular field once.
	var spans [64]struct{ start, end int }
	prev := -1
	for pos := 0; pos < len(b); {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[pos+n:])
		if m < 0 {
			return nil, false
		}
		f := s.byNum[num]
		if f == nil {
			pos += n + m // unknown fields are not written
			continue
		}
		if f.unsupported {
			return nil, false
		}
		span := &spans[f.index]
		switch {
		case span.end == 0:
			span.start = pos
		case int(f.index) != prev || (!f.list && f.mapKey == nil):
			return nil, false
		}
		pos += n + m
		span.end = pos
		prev = int(f.index)
	}
	out = append(out, '{')
	first := true
	for i, f := range s.fields {
		span := spans[i]
		if span.end == 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, f.jsonKey...)
		run := b[span.start:span.end]
		var ok bool
		switch {
		case f.mapKey != nil:
			out, _, ok = encodeMap(out, f, run)
		case f.list:
			out, _, ok = encodeList(out, f, run)
		default:
			_, typ, n := protowire.ConsumeTag(run)
			out, ok = encodeValue(out, f, typ, run[n:])
		}
		if !ok {
			return nil, false
		}
	}
	return append(out, '}'), true
}

// encodeList writes the occurrences of repeated field f at the head of b,
// packed or not, as one array, and returns the rest of b.
func encodeList(out []byte, f *fieldSchema, b []byte) ([]byte, []byte, bool) {
	out = append(out, '[')
	first := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != f.num {
			break
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, nil, false
		}
		val := b[n : n+m]
		b = b[n+m:]
		if typ == protowire.BytesType && f.kind != protoreflect.StringKind &&
			f.kind != protoreflect.BytesKind && f.kind != protoreflect.MessageKind {
			packed, k := protowire.ConsumeBytes(val)
			if k < 0 {
				return nil, nil, false
			}
			elemType := protowire.VarintType
			switch f.kind {
			case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
				elemType = protowire.Fixed32Type
			case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
				elemType = protowire.Fixed64Type
			}
			for len(packed) > 0 {
				k := protowire.ConsumeFieldValue(f.num, elemType, packed)
				if k < 0 {
					return nil, nil, false
				}
				if !first {
					out = append(out, ',')
				}
				first = false
				var ok bool
				if out, ok = encodeValue(out, f, elemType, packed[:k]); !ok {
					return nil, nil, false
				}
				packed = packed[k:]
			}
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		var ok bool
		if out, ok = encodeValue(out, f, typ, val); !ok {
			return nil, nil, false
		}
	}
	return append(out, ']'), b, true
}

// encodeMap writes the entries of map field f at the head of b as one
// object; only string keys are handled.
func encodeMap(out []byte, f *fieldSchema, b []byte) ([]byte, []byte, bool) {
	if f.mapKey.kind != protoreflect.StringKind || f.mapValue.unsupported {
		return nil, nil, false
	}
	out = append(out, '{')
	first := true
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num != f.num {
			break
		}
		if typ != protowire.BytesType {
			return nil, nil, false
		}
		entry, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return nil, nil, false
		}
		b = b[n+m:]
		var key []byte
		var val []byte
		valType := protowire.Type(-1)
		for len(entry) > 0 {
			enum, etyp, en := protowire.ConsumeTag(entry)
			if en < 0 {
				return nil, nil, false
			}
			em := protowire.ConsumeFieldValue(enum, etyp, entry[en:])
			if em < 0 {
				return nil, nil, false
			}
			switch enum {
			case 1:
				k, kn := protowire.ConsumeBytes(entry[en:])
				if etyp != protowire.BytesType || kn < 0 {
					return nil, nil, false
				}
				key = k
			case 2:
				val, valType = entry[en:en+em], etyp
			}
			entry = entry[en+em:]
		}
		if valType < 0 {
			return nil, nil, false // protojson writes the zero value; rare
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		var ok bool
		if out, ok = appendJSONString(out, key); !ok {
			return nil, nil, false
		}
		out = append(out, ':')
		if out, ok = encodeValue(out, f.mapValue, valType, val); !ok {
			return nil, nil, false
		}
	}
	return append(out, '}'), b, true
}

// encodeValue writes one value of field f, given as wire type typ and the
// bytes of that value.
func encodeValue(out []byte, f *fieldSchema, typ protowire.Type, val []byte) ([]byte, bool) {
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(val)
		if n < 0 {
			return nil, false
		}
		switch f.kind {
		case protoreflect.BoolKind:
			if v != 0 {
				return append(out, "true"...), true
			}
			return append(out, "false"...), true
		case protoreflect.Int32Kind:
			return strconv.AppendInt(out, int64(int32(v)), 10), true
		case protoreflect.Sint32Kind:
			return strconv.AppendInt(out, int64(int32(protowire.DecodeZigZag(v&0xffffffff))), 10), true
		case protoreflect.Uint32Kind:
			return strconv.AppendUint(out, uint64(uint32(v)), 10), true
		case protoreflect.Int64Kind:
			return quoted(strconv.AppendInt(append(out, '"'), int64(v), 10)), true
		case protoreflect.Sint64Kind:
			return quoted(strconv.AppendInt(append(out, '"'), protowire.DecodeZigZag(v), 10)), true
		case protoreflect.Uint64Kind:
			return quoted(strconv.AppendUint(append(out, '"'), v, 10)), true
		case protoreflect.EnumKind:
			if name, ok := f.enumNames[int32(v)]; ok {
				out = append(out, '"')
				out = append(out, name...)
				return append(out, '"'), true
			}
			return strconv.AppendInt(out, int64(int32(v)), 10), true
		}
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(val)
		if n < 0 {
			return nil, false
		}
		switch f.kind {
		case protoreflect.Fixed32Kind:
			return strconv.AppendUint(out, uint64(v), 10), true
		case protoreflect.Sfixed32Kind:
			return strconv.AppendInt(out, int64(int32(v)), 10), true
		}
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(val)
		if n < 0 {
			return nil, false
		}
		switch f.kind {
		case protoreflect.Fixed64Kind:
			return quoted(strconv.AppendUint(append(out, '"'), v, 10)), true
		case protoreflect.Sfixed64Kind:
			return quoted(strconv.AppendInt(append(out, '"'), int64(v), 10)), true
		}
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(val)
		if n < 0 {
			return nil, false
		}
		switch f.kind {
		case protoreflect.StringKind:
			return appendJSONString(out, v)
		case protoreflect.BytesKind:
			out = append(out, '"')
			out = base64.StdEncoding.AppendEncode(out, v)
			return append(out, '"'), true
		case protoreflect.MessageKind:
			return encodeMessage(out, f.msg, v)
		}
	}
	// Floats, groups and wire types that do not match the field.
	return nil, false
}

func quoted(out []byte) []byte { return append(out, '"') }

// appendJSONString writes s as a JSON string with protojson's escapes:
// quotes, backslashes and control characters; invalid UTF-8 is refused.
func appendJSONString(out, s []byte) ([]byte, bool) {
	out = append(out, '"')
	for len(s) > 0 {
		c := s[0]
		switch {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s)
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, s[:n]...)
			s = s[n:]
			continue
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c >= ' ':
			out = append(out, c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		s = s[1:]
	}
	return append(out, '"'), true
}
