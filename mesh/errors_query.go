package mesh

import (
	"fmt"
	"unicode/utf8"
)

// ParseError reports a query string that does not parse.
type ParseError struct {
	Query  string // the whole input
	Offset int    // byte offset of the problem in Query
	Msg    string // what is wrong and how to fix it
	// Field is the unknown field name, as written, when that is the
	// problem (a misspelt field or sort key, or a content property written
	// without its content. prefix); Suggestion is then what was probably
	// meant: the nearest known field, or the content property.
	Field      string
	Suggestion string
}

func (e *ParseError) Error() string {
	if e.Offset >= len(e.Query) {
		return fmt.Sprintf("mesh: query: at end of input (offset %d): %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("mesh: query: at offset %d near %s: %s", e.Offset, quoteClipped(e.near(), 24), e.Msg)
}

// near returns the input from Offset on, starting at a rune boundary.
func (e *ParseError) near() string {
	off := max(e.Offset, 0)
	for off > 0 && off < len(e.Query) && !utf8.RuneStart(e.Query[off]) {
		off--
	}
	return e.Query[off:]
}

// UnanchoredQueryError reports a query refused by the router: it names no
// partition, so answering it would read every partition schema, and it neither
// declares partitions:all nor has its shape on the allow list.
type UnanchoredQueryError struct {
	Query string // canonical form of the refused query
	Shape string // its shape, as DescribeShape prints it
}

func (e *UnanchoredQueryError) Error() string {
	return fmt.Sprintf("mesh: refused unanchored query %s (shape %q): it names no partition, so it would "+
		"fan out over every partition schema; anchor it with path: or namespace:, or declare it mesh-wide with partitions:all",
		quoteClipped(e.Query, 200), e.Shape)
}
