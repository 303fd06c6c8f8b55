package crdt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
)

// CounterType is the kind of a counter.
type CounterType int

// The counter types.
const (
	// CounterInt holds a JavaScript number that wraps to 32 bits on most increases.
	CounterInt CounterType = iota
	// CounterLong holds a 64-bit integer that wraps.
	CounterLong
	// CounterIntDedup counts distinct actors with a HyperLogLog; each actor adds one once.
	CounterIntDedup
)

// ErrInvalidIncrease reports an increase the SDK refuses: a non-numeric delta, a dedup
// counter increased without an actor or by anything but one.
var ErrInvalidIncrease = errors.New("invalid increase")

// Counter is a number that replicas increase concurrently.
type Counter struct {
	base
	kind CounterType
	num  float64 // CounterInt, CounterIntDedup
	long int64   // CounterLong
	hll  *hll    // CounterIntDedup
}

// NewCounter reads a counter of type kind from its wire bytes, as the SDK's
// CRDTCounter.valueFromBytes followed by CRDTCounter.create. A dedup counter starts at
// zero whatever its bytes say; its count comes from its registers (RestoreHLL).
func NewCounter(kind CounterType, value []byte, createdAt Ticket) (*Counter, error) {
	c := &Counter{base: base{createdAt: createdAt}, kind: kind}
	switch kind {
	case CounterInt:
		var u uint32
		for i := 0; i < 4 && i < len(value); i++ {
			u |= uint32(value[i]) << (8 * i)
		}
		c.num = float64(int32(u))
	case CounterLong:
		if len(value) < 8 {
			return nil, fmt.Errorf("%w: long counter of %d bytes", ErrMalformedValue, len(value))
		}
		c.long = int64(binary.LittleEndian.Uint64(value))
	case CounterIntDedup:
		c.hll = newHLL()
	default:
		return nil, fmt.Errorf("%w: counter type %d", ErrMalformedValue, kind)
	}
	return c, nil
}

// Type is the counter's type.
func (c *Counter) Type() CounterType { return c.kind }

// RestoreHLL loads a dedup counter's registers and recomputes its value.
func (c *Counter) RestoreHLL(registers []byte) error {
	if c.kind != CounterIntDedup {
		return nil
	}
	if err := c.hll.restore(registers); err != nil {
		return err
	}
	c.num = c.hll.count()
	return nil
}

// HLLRegisters is a dedup counter's registers (nil for other counters).
func (c *Counter) HLLRegisters() []byte {
	if c.hll == nil {
		return nil
	}
	return c.hll.registers
}

// Bytes is the value as the SDK encodes it (CRDTCounter.toBytes).
func (c *Counter) Bytes() []byte {
	if c.kind == CounterLong {
		return binary.LittleEndian.AppendUint64(nil, uint64(c.long))
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(toInt32(c.num)))
}

// Increase adds v, as the SDK's CRDTCounter.increase: a Long counter adds the truncated
// delta modulo 2^64; an Int counter adds a Long delta's low 32 bits without wrapping the
// sum, and wraps the sum to 32 bits after adding a truncated number.
func (c *Counter) Increase(v *Primitive) error {
	if c.kind == CounterIntDedup {
		return fmt.Errorf("%w: a dedup counter needs an actor", ErrInvalidIncrease)
	}
	if !v.IsNumeric() {
		return fmt.Errorf("%w: delta of type %d", ErrInvalidIncrease, v.Type())
	}
	if c.kind == CounterLong {
		if v.Type() == PrimitiveLong {
			c.long += v.Long()
			return nil
		}
		d, err := wrapInt64(math.Trunc(v.Number()))
		if err != nil {
			return err
		}
		c.long += d
		return nil
	}
	if v.Type() == PrimitiveLong {
		c.num += float64(int32(v.Long()))
		return nil
	}
	sum := c.num + math.Trunc(v.Number())
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		return fmt.Errorf("%w: sum %v is not an integer", ErrInvalidIncrease, sum)
	}
	c.num = float64(toInt32(sum))
	return nil
}

// IncreaseDedup counts actor once, as the SDK's CRDTCounter.increaseDedup; other counters
// increase by v as usual.
func (c *Counter) IncreaseDedup(v *Primitive, actor string) error {
	if c.kind != CounterIntDedup {
		return c.Increase(v)
	}
	if !v.IsNumeric() {
		return fmt.Errorf("%w: delta of type %d", ErrInvalidIncrease, v.Type())
	}
	if actor == "" {
		return fmt.Errorf("%w: a dedup counter needs an actor", ErrInvalidIncrease)
	}
	unit := v.Number() == 1
	if v.Type() == PrimitiveLong {
		unit = v.Long() == 1
	}
	if !unit {
		return fmt.Errorf("%w: a dedup counter only increases by one", ErrInvalidIncrease)
	}
	if c.hll.add(actor) {
		c.num = c.hll.count()
	}
	return nil
}

// wrapInt64 is BigInt.asIntN(64, BigInt(f)) for an integral f.
func wrapInt64(f float64) (int64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: delta %v is not an integer", ErrInvalidIncrease, f)
	}
	if f >= -9223372036854775808 && f < 9223372036854775808 {
		return int64(f), nil
	}
	i, _ := new(big.Float).SetFloat64(f).Int(nil)
	mask := new(big.Int).SetUint64(math.MaxUint64)
	return int64(i.And(i, mask).Uint64()), nil
}

// DataSize implements Element.
func (c *Counter) DataSize() DataSize {
	d := 4
	switch c.kind {
	case CounterLong:
		d = 8
	case CounterIntDedup:
		d += HLLRegisters
	}
	return DataSize{Data: d, Meta: c.metaSize()}
}

// JSON implements Element.
func (c *Counter) JSON(b []byte) []byte {
	if c.kind == CounterLong {
		return strconv.AppendInt(b, c.long, 10)
	}
	return appendJSNumber(b, c.num)
}

// DeepCopy implements Element.
func (c *Counter) DeepCopy() Element {
	d := *c
	if c.hll != nil {
		d.hll = &hll{registers: append([]byte{}, c.hll.registers...)}
	}
	return &d
}
