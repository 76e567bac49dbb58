package sqlgen

import (
	"strings"
	"time"

	"github.com/meshrx/meshrx/mesh"
)

// lastModified: mesh reads it as the UTC time in RFC 3339 with nanoseconds
// (trailing zeros trimmed). That text reads back as a time only for years
// 0000 to 9999; outside them mesh compares it as a string. So a condition
// on lastModified compares instants within that range and Go's text outside
// it, and the text is rebuilt in SQL exactly as Go formats it.

// goTimeText returns the SQL for Go's time.Format(time.RFC3339Nano) of the
// UTC time in column col. PostgreSQL counts years 1 BC, 2 BC as -1, -2;
// Go's proleptic calendar has years 0, -1.
func goTimeText(col string) string {
	u := "(" + col + " AT TIME ZONE 'UTC')"
	year := "(CASE WHEN extract(year FROM " + u + ")::bigint < 0 " +
		"THEN extract(year FROM " + u + ")::bigint + 1 ELSE extract(year FROM " + u + ")::bigint END)"
	return "(CASE WHEN NOT isfinite(" + col + ") THEN '' ELSE " +
		"CASE WHEN " + year + " < 0 THEN '-' ELSE '' END" +
		" || lpad(abs(" + year + ")::text, greatest(4, length(abs(" + year + ")::text)), '0')" +
		" || to_char(" + u + `, '-MM-DD"T"HH24:MI:SS')` +
		" || CASE WHEN to_char(" + u + ", 'US') = '000000' THEN '' ELSE '.' || rtrim(to_char(" + u + ", 'US'), '0') END" +
		" || 'Z' END)"
}

// lowerGoTimeText is goTimeText lower-cased: the text is ASCII and its only
// letters are T and Z.
func lowerGoTimeText(col string) string {
	return "translate(" + goTimeText(col) + ", 'TZ', 'tz')"
}

// timeRange returns the SQL that holds when col's Go text reads as a time.
func (b *builder) timeRange(col string) string {
	if b.yearZero == "" {
		b.yearZero = b.param(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), "timestamptz")
		b.year10000 = b.param(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "timestamptz")
	}
	return "(" + col + " >= " + b.yearZero + " AND " + col + " < " + b.year10000 + ")"
}

func (b *builder) lastModifiedMatch(c mesh.Cond) pred {
	const col = "n.last_modified"
	var textAlts, outsideAlts []string
	var instants []pred
	var parts []pred
	for _, w := range c.Values {
		if tooHard(w) {
			b.residual(c, tooHardWhy)
			parts = append(parts, superset)
			continue
		}
		var pat strings.Builder
		glob := strings.Contains(w, "*")
		lowerPattern(&pat, w, glob)
		t, isTime := time.Time{}, false
		if !glob && !isNumber(w) {
			t, isTime = parseTime(w)
		}
		if !isTime {
			textAlts = append(textAlts, pat.String())
			continue
		}
		outsideAlts = append(outsideAlts, pat.String())
		if t, cut := floorMicro(t); !cut {
			instants = append(instants, exactly(col+" = "+b.param(t, "timestamptz")))
		}
	}
	if len(fullMatch(textAlts))+len(fullMatch(outsideAlts)) > maxPatternBytes {
		b.residual(c, tooHardWhy)
		return superset
	}
	if re := fullMatch(textAlts); re != "" {
		parts = append(parts, exactly(goTimeText(col)+" ~ "+b.param(re, "text")))
	}
	if len(outsideAlts) > 0 {
		inside := anyOf(instants...)
		outside := exactly(goTimeText(col) + " ~ " + b.param(fullMatch(outsideAlts), "text"))
		parts = append(parts, exactly("CASE WHEN "+b.timeRange(col)+" THEN "+inside.sql+" ELSE "+outside.sql+" END"))
	}
	return anyOf(parts...)
}

func (b *builder) lastModifiedCompare(c mesh.Cond, op string) pred {
	const col = "n.last_modified"
	w := c.Values[0]
	asText := lowerGoTimeText(col) + ` COLLATE "C" ` + op + " " + b.param(strings.ToLower(w), "text")
	t, ok := parseTime(w)
	if !ok || isNumber(w) {
		return exactly(asText)
	}
	// PostgreSQL keeps microseconds. Against a time with a fraction below
	// that, a row at the floor is already less, so > and >= become "after
	// the floor" and < and <= become "at or before the floor".
	t, cut := floorMicro(t)
	if cut {
		switch op {
		case ">", ">=":
			op = ">"
		default:
			op = "<="
		}
	}
	asTime := col + " " + op + " " + b.param(t, "timestamptz")
	return exactly("CASE WHEN " + b.timeRange(col) + " THEN " + asTime + " ELSE " + asText + " END")
}
