package sqlgen

import (
	"slices"
	"strings"
)

// pred is a boolean SQL expression over one row (table alias n). It is
// never NULL, so NOT inverts it. When exact, it holds exactly when mesh's
// evaluation of the same condition does; otherwise it holds at least then
// (a superset), and the rows it lets through must still be filtered in Go.
type pred struct {
	sql   string
	exact bool
}

func exactly(sql string) pred { return pred{sql: sql, exact: true} }

var (
	predTrue  = exactly("TRUE")
	predFalse = exactly("FALSE")
)

// superset is TRUE as a stand-in for a condition SQL cannot reproduce.
var superset = pred{sql: "TRUE"}

// allOf is the conjunction of ps. A conjunct that is FALSE (a superset that
// rules a row out rules it out exactly) makes the whole FALSE.
func allOf(ps ...pred) pred {
	exact := true
	var parts []string
	for _, p := range ps {
		if p.sql == "FALSE" {
			return predFalse
		}
		exact = exact && p.exact
		if p.sql != "TRUE" {
			parts = append(parts, "("+p.sql+")")
		}
	}
	if len(parts) == 0 {
		return pred{sql: "TRUE", exact: exact}
	}
	return pred{sql: strings.Join(parts, " AND "), exact: exact}
}

// anyOf is the disjunction of ps. A disjunct that is FALSE is dropped: even
// as a superset it says the condition does not hold.
func anyOf(ps ...pred) pred {
	exact := true
	var parts []string
	for _, p := range ps {
		switch {
		case p.sql == "TRUE" && p.exact:
			return predTrue
		case p.sql == "FALSE":
			continue
		}
		exact = exact && p.exact
		parts = append(parts, "("+p.sql+")")
	}
	switch {
	case len(parts) == 0:
		return predFalse
	case !exact && slices.Contains(parts, "(TRUE)"):
		return superset
	}
	return pred{sql: strings.Join(parts, " OR "), exact: exact}
}

// not negates p. The negation of a superset is not a superset of the
// negation, so an inexact p becomes TRUE.
func not(p pred) pred {
	switch {
	case !p.exact:
		return superset
	case p.sql == "TRUE":
		return predFalse
	case p.sql == "FALSE":
		return predTrue
	}
	return exactly("NOT (" + p.sql + ")")
}
