package sqlgen

import (
	"github.com/meshrx/meshrx/mesh/internal/scalar"

	"time"
)

// These mirror how mesh types a query value before comparing it (see
// (*mesh.Query).Matches): a value is a number, a time or a string, and two
// values compare as numbers only when both are numbers, as times only when
// both are times. The SQL generated for a condition depends on the type of
// its value, so the typing must be mesh's exactly.

// parseNumber and parseTime are mesh's own typing of a value (see
// mesh/internal/scalar): the SQL generated for a condition depends on it.
func parseNumber(s string) (scalar.Number, bool) { return scalar.ParseNumber(s) }
func parseTime(s string) (time.Time, bool)       { return scalar.ParseTime(s) }

// floorMicro returns t rounded down to a whole microsecond, PostgreSQL's
// timestamp resolution, and whether anything was cut off.
func floorMicro(t time.Time) (time.Time, bool) {
	sub := time.Duration(t.Nanosecond() % 1000)
	return t.Add(-sub), sub != 0
}
