package sqlgen

import (
	"strconv"
	"time"
)

// These mirror how mesh types a query value before comparing it (see
// (*mesh.Query).Matches): a value is a number, a time or a string, and two
// values compare as numbers only when both are numbers, as times only when
// both are times. The SQL generated for a condition depends on the type of
// its value, so the typing must be mesh's exactly.

// number is a parsed numeric value; integers keep full int64 precision.
type number struct {
	isInt bool
	i     int64
	f     float64 // the value as float64 (±Inf when out of range)
}

// parseNumber reads s as a decimal number: an optional sign, digits with an
// optional fraction, and an optional exponent.
func parseNumber(s string) (number, bool) {
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
		return number{}, false
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
			return number{}, false
		}
	}
	if i != len(s) {
		return number{}, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{isInt: true, i: n, f: float64(n)}, true
	}
	// The syntax is checked above, so the only error left is range: the
	// value saturates to ±Inf or 0, as in mesh.
	f, _ := strconv.ParseFloat(s, 64)
	return number{f: f}, true
}

// parseTime reads an RFC 3339 time or a date (YYYY-MM-DD, midnight UTC).
func parseTime(s string) (time.Time, bool) {
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

// floorMicro returns t rounded down to a whole microsecond, PostgreSQL's
// timestamp resolution, and whether anything was cut off.
func floorMicro(t time.Time) (time.Time, bool) {
	sub := time.Duration(t.Nanosecond() % 1000)
	return t.Add(-sub), sub != 0
}
