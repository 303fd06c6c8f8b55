package crdt

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// The SDK's HyperLogLog: 2^14 one-byte registers over xxHash64 of the actor's UTF-8 bytes.
const (
	hllPrecision = 14
	// HLLRegisters is the register count, the length of a dedup counter's hll_registers.
	HLLRegisters = 1 << hllPrecision
)

// hll counts distinct actors for a dedup counter.
type hll struct {
	registers []byte
}

func newHLL() *hll { return &hll{registers: make([]byte, HLLRegisters)} }

// add records value and reports whether a register grew.
func (h *hll) add(value string) bool {
	hash := xxhash64([]byte(value))
	idx := hash >> (64 - hllPrecision)
	rest := hash<<hllPrecision | 1<<(hllPrecision-1)
	rho := byte(bits.LeadingZeros64(rest) + 1)
	if rho > h.registers[idx] {
		h.registers[idx] = rho
		return true
	}
	return false
}

// count is the cardinality estimate, computed in the SDK's order of floating-point steps.
func (h *hll) count() float64 {
	m := float64(HLLRegisters)
	alpha := 0.7213 / (1.0 + 1.079/m)
	sum := 0.0
	zeros := 0
	for _, r := range h.registers {
		sum += math.Pow(2, -float64(r))
		if r == 0 {
			zeros++
		}
	}
	estimate := alpha * m * m / sum
	if estimate <= 2.5*m && zeros > 0 {
		estimate = m * math.Log(m/float64(zeros))
	}
	return jsRound(estimate)
}

// restore replaces the registers with data, which must hold exactly HLLRegisters bytes.
func (h *hll) restore(data []byte) error {
	if len(data) != HLLRegisters {
		return fmt.Errorf("%w: hll registers of %d bytes, want %d", ErrMalformedValue, len(data), HLLRegisters)
	}
	copy(h.registers, data)
	return nil
}

// jsRound is Math.round: halves round up, towards positive infinity.
func jsRound(f float64) float64 {
	r := math.Floor(f)
	if f-r >= 0.5 {
		r++
	}
	return r
}

const (
	xxPrime1 uint64 = 0x9e3779b185ebca87
	xxPrime2 uint64 = 0xc2b2ae3d27d4eb4f
	xxPrime3 uint64 = 0x165667b19e3779f9
	xxPrime4 uint64 = 0x85ebca77c2b2ae63
	xxPrime5 uint64 = 0x27d4eb2f165667c5
)

func xxRound(acc, input uint64) uint64 {
	acc += input * xxPrime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * xxPrime1
}

func xxMerge(acc, val uint64) uint64 {
	acc ^= xxRound(0, val)
	return acc*xxPrime1 + xxPrime4
}

// xxhash64 is XXH64 with seed 0.
func xxhash64(b []byte) uint64 {
	n := len(b)
	var h uint64
	p := 0
	if n >= 32 {
		p1, p2 := xxPrime1, xxPrime2
		v1 := p1 + p2
		v2 := p2
		v3 := uint64(0)
		v4 := -p1
		for ; p <= n-32; p += 32 {
			v1 = xxRound(v1, binary.LittleEndian.Uint64(b[p:]))
			v2 = xxRound(v2, binary.LittleEndian.Uint64(b[p+8:]))
			v3 = xxRound(v3, binary.LittleEndian.Uint64(b[p+16:]))
			v4 = xxRound(v4, binary.LittleEndian.Uint64(b[p+24:]))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) + bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = xxMerge(h, v1)
		h = xxMerge(h, v2)
		h = xxMerge(h, v3)
		h = xxMerge(h, v4)
	} else {
		h = xxPrime5
	}
	h += uint64(n)
	for ; p+8 <= n; p += 8 {
		h ^= xxRound(0, binary.LittleEndian.Uint64(b[p:]))
		h = bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
	}
	if p+4 <= n {
		h ^= uint64(binary.LittleEndian.Uint32(b[p:])) * xxPrime1
		h = bits.RotateLeft64(h, 23)*xxPrime2 + xxPrime3
		p += 4
	}
	for ; p < n; p++ {
		h ^= uint64(b[p]) * xxPrime5
		h = bits.RotateLeft64(h, 11) * xxPrime1
	}
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	h ^= h >> 32
	return h
}
