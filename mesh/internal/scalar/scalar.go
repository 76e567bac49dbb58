// Package scalar is how mesh types a value before comparing it: a number, a
// time, or a string. Query matching (mesh) and its SQL translation
// (mesh/pgstore) must type values identically, so both use this package.
package scalar

import (
	"cmp"
	"strconv"
	"time"
)

// Number is a parsed numeric value; integers keep full int64 precision.
type Number struct {
	IsInt bool
	Int   int64   // the value, when IsInt
	Float float64 // the value as float64 (±Inf or 0 when out of range)
}

// Compare orders a and b: exactly when both are integers, as float64 otherwise.
func (a Number) Compare(b Number) int {
	if a.IsInt && b.IsInt {
		return cmp.Compare(a.Int, b.Int)
	}
	return cmp.Compare(a.Float, b.Float)
}

// ParseNumber reads s as a decimal number: an optional sign, digits with an
// optional fraction, and an optional exponent. Words such as "Inf" are not
// numbers.
func ParseNumber(s string) (Number, bool) {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return Number{}, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return Number{}, false
		}
	}
	if i != len(s) {
		return Number{}, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Number{IsInt: true, Int: n, Float: float64(n)}, true
	}
	// The syntax is checked above, so the only error left is range: the value
	// saturates to ±Inf or 0, which still orders.
	f, _ := strconv.ParseFloat(s, 64)
	return Number{Float: f}, true
}

// ParseTime reads an RFC 3339 time or a date (YYYY-MM-DD, midnight UTC).
func ParseTime(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' {
		return time.Time{}, false
	}
	if len(s) == 10 {
		t, err := time.Parse(time.DateOnly, s)
		return t, err == nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
