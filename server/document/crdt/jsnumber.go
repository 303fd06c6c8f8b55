package crdt

import (
	"math"
	"strconv"
)

// appendJSNumber writes f as JavaScript's Number.prototype.toString does (which is what
// template strings and JSON.stringify print): the shortest digits that read back as f, in
// fixed notation for exponents from -7 to 20 and in exponent notation ("1e+21", "1.5e-7")
// outside; NaN and infinities by name, negative zero as "0".
func appendJSNumber(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		return append(b, '0')
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	if f < 1e21 && f == math.Trunc(f) {
		// Integers below 1e21 print every digit; the shortest form of those past 2^53
		// ends in zeros, which 'f' with -1 precision writes as JavaScript does.
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	// The shortest round-trip digits and the decimal exponent: f = 0.d1d2...dk * 10^n.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits []byte
	i := 0
	for ; i < len(e) && e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits = append(digits, e[i])
		}
	}
	exp, _ := strconv.Atoi(string(e[i+1:]))
	n := exp + 1
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for j := 0; j < n-k; j++ {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for j := 0; j < -n; j++ {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// toInt32 is JavaScript's ToInt32 of an integral or any finite number: truncate, then
// wrap modulo 2^32 into the signed range. NaN and infinities give 0.
func toInt32(f float64) int32 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	f = math.Trunc(f)
	if f >= math.MinInt32 && f <= math.MaxInt32 {
		return int32(f)
	}
	m := math.Mod(f, 4294967296) // exact
	if m < 0 {
		m += 4294967296
	}
	return int32(uint32(m))
}
