package crdt

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// PrimitiveType is the kind of a primitive value; the numbers are the wire's ValueType.
type PrimitiveType int32

// The primitive types.
const (
	PrimitiveNull PrimitiveType = iota
	PrimitiveBoolean
	PrimitiveInteger
	PrimitiveLong
	PrimitiveDouble
	PrimitiveString
	PrimitiveBytes
	PrimitiveDate
)

// ErrMalformedValue reports value bytes the SDK could not read as their type.
var ErrMalformedValue = errors.New("malformed value")

// maxDateMillis is the largest magnitude of a valid JavaScript Date, in milliseconds.
const maxDateMillis = 8.64e15

// Primitive is an immutable leaf value. It keeps the value as the SDK holds it after reading
// the wire bytes: a JavaScript number for Integer and Double (an integral Double becomes an
// Integer, as the SDK re-derives the type from the number), a 64-bit integer for Long,
// milliseconds for Date, a string already decoded as TextDecoder decodes UTF-8.
type Primitive struct {
	base
	kind  PrimitiveType
	b     bool
	num   float64 // Integer, Double; Date (milliseconds)
	long  int64
	str   string
	bytes []byte
}

// NewPrimitive reads a primitive of type kind from its wire bytes, as the SDK's
// Primitive.valueFromBytes followed by Primitive.of. It refuses bytes the SDK would throw
// on (or read past): a Double or Long or Date shorter than 8 bytes, a Date outside the
// range of JavaScript dates, an unknown type.
func NewPrimitive(kind PrimitiveType, value []byte, createdAt Ticket) (*Primitive, error) {
	p := &Primitive{base: base{createdAt: createdAt}, kind: kind}
	switch kind {
	case PrimitiveNull:
	case PrimitiveBoolean:
		p.b = len(value) > 0 && value[0] != 0
	case PrimitiveInteger:
		var u uint32
		for i := 0; i < 4 && i < len(value); i++ {
			u |= uint32(value[i]) << (8 * i)
		}
		p.num = float64(int32(u))
	case PrimitiveDouble:
		if len(value) < 8 {
			return nil, fmt.Errorf("%w: double of %d bytes", ErrMalformedValue, len(value))
		}
		p.num = math.Float64frombits(binary.LittleEndian.Uint64(value))
		if isJSInteger(p.num) {
			p.kind = PrimitiveInteger
		}
	case PrimitiveString:
		p.str = decodeUTF8(value)
	case PrimitiveLong:
		if len(value) < 8 {
			return nil, fmt.Errorf("%w: long of %d bytes", ErrMalformedValue, len(value))
		}
		p.long = int64(binary.LittleEndian.Uint64(value))
	case PrimitiveBytes:
		p.bytes = append([]byte{}, value...)
	case PrimitiveDate:
		if len(value) < 8 {
			return nil, fmt.Errorf("%w: date of %d bytes", ErrMalformedValue, len(value))
		}
		// The SDK reads dates unsigned.
		ms := float64(binary.LittleEndian.Uint64(value))
		if ms > maxDateMillis {
			return nil, fmt.Errorf("%w: date out of range", ErrMalformedValue)
		}
		p.num = ms
	default:
		return nil, fmt.Errorf("%w: primitive type %d", ErrMalformedValue, kind)
	}
	return p, nil
}

// isJSInteger is the SDK's Primitive.isInteger: num % 1 === 0.
func isJSInteger(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// Type is the primitive's type as the SDK sees it.
func (p *Primitive) Type() PrimitiveType { return p.kind }

// IsNumeric reports whether the value is a number (Integer, Long or Double).
func (p *Primitive) IsNumeric() bool {
	return p.kind == PrimitiveInteger || p.kind == PrimitiveLong || p.kind == PrimitiveDouble
}

// Number is the value of an Integer or Double.
func (p *Primitive) Number() float64 { return p.num }

// Long is the value of a Long.
func (p *Primitive) Long() int64 { return p.long }

// Bytes is the value as the SDK encodes it (Primitive.toBytes).
func (p *Primitive) Bytes() []byte {
	switch p.kind {
	case PrimitiveBoolean:
		if p.b {
			return []byte{1}
		}
		return []byte{0}
	case PrimitiveInteger:
		return binary.LittleEndian.AppendUint32(nil, uint32(toInt32(p.num)))
	case PrimitiveDouble:
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(p.num))
	case PrimitiveString:
		return []byte(p.str)
	case PrimitiveLong:
		return binary.LittleEndian.AppendUint64(nil, uint64(p.long))
	case PrimitiveBytes:
		return p.bytes
	case PrimitiveDate:
		return binary.LittleEndian.AppendUint64(nil, uint64(int64(p.num)))
	}
	return nil
}

// valueSize is what the value counts for, as the SDK's getValueSize.
func (p *Primitive) valueSize() int {
	switch p.kind {
	case PrimitiveNull, PrimitiveLong, PrimitiveDouble, PrimitiveDate:
		return 8
	case PrimitiveBoolean, PrimitiveInteger:
		return 4
	case PrimitiveString:
		return 2 * utf16Len(p.str)
	case PrimitiveBytes:
		return len(p.bytes)
	}
	return 0
}

// DataSize implements Element.
func (p *Primitive) DataSize() DataSize { return DataSize{Data: p.valueSize(), Meta: p.metaSize()} }

// JSON implements Element.
func (p *Primitive) JSON(b []byte) []byte {
	switch p.kind {
	case PrimitiveNull:
		return append(b, "null"...)
	case PrimitiveBoolean:
		return strconv.AppendBool(b, p.b)
	case PrimitiveInteger, PrimitiveDouble:
		return appendJSNumber(b, p.num)
	case PrimitiveLong:
		return strconv.AppendInt(b, p.long, 10)
	case PrimitiveString:
		b = append(b, '"')
		b = appendEscaped(b, p.str)
		return append(b, '"')
	case PrimitiveBytes:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, p.bytes)
		return append(b, '"')
	case PrimitiveDate:
		b = append(b, '"')
		b = appendISODate(b, int64(p.num))
		return append(b, '"')
	}
	return b
}

// DeepCopy implements Element.
func (p *Primitive) DeepCopy() Element {
	c := *p
	return &c
}

// appendISODate writes ms since the epoch as Date.prototype.toISOString does; years past
// 9999 take the six-digit signed form.
func appendISODate(b []byte, ms int64) []byte {
	t := time.UnixMilli(ms).UTC()
	if y := t.Year(); y > 9999 {
		b = append(b, '+')
		b = appendPadded(b, y, 6)
	} else {
		b = appendPadded(b, y, 4)
	}
	return t.AppendFormat(b, "-01-02T15:04:05.000Z")
}

func appendPadded(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// utf16Len is the length of s in UTF-16 code units, JavaScript's string length.
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// decodeUTF8 decodes b as the WHATWG UTF-8 decoder (TextDecoder) does: a leading byte order
// mark is dropped and every maximal invalid subsequence becomes one U+FFFD.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
			b = b[3:]
		}
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, c)
			i++
			continue
		}
		need, lower, upper := 0, byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c >= 0xE0 && c <= 0xEF:
			need = 2
			if c == 0xE0 {
				lower = 0xA0
			} else if c == 0xED {
				upper = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			need = 3
			if c == 0xF0 {
				lower = 0x90
			} else if c == 0xF4 {
				upper = 0x8F
			}
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lower || b[j] > upper {
				ok = false
				break
			}
			lower, upper = 0x80, 0xBF
			j++
		}
		if ok {
			out = append(out, b[i:j]...)
		} else {
			// The offending byte, if any, starts the next sequence.
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i = j
	}
	if len(out) >= 3 && out[0] == 0xEF && out[1] == 0xBB && out[2] == 0xBF {
		out = out[3:]
	}
	return string(out)
}

// StringValue is the value of a String primitive.
func (p *Primitive) StringValue() string { return p.str }
