package mesh

import (
	"fmt"
	"strings"
)

// nodeFields are the node fields a query may name, in canonical spelling.
var nodeFields = [...]string{"id", "namespace", "path", "name", "nodeType", "mainNode", "state", "version", "lastModified", "content"}

// qualifiers apply to the whole query; they are suggested for a misspelt
// filter field, never for sort: or select:.
var qualifiers = [...]string{"path", "namespace", "scope", "sort", "limit", "select", "partitions"}

// unknownField returns the message and suggestion for a field name that is
// neither a node field nor a content.-prefixed property. The suggestion is
// the nearest known field when one is close (a typo), otherwise the
// content property the user may have meant.
func unknownField(name string, withQualifiers bool) (msg, suggestion string) {
	if strings.HasPrefix(FoldName(name), "content.") {
		return fmt.Sprintf("field %q has an empty property name", name), ""
	}
	candidates := nodeFields[:]
	if withQualifiers {
		candidates = append(candidates[:len(candidates):len(candidates)], qualifiers[:]...)
	}
	best, bestDist := "", 0
	lower := FoldName(name)
	for _, c := range candidates {
		d := editDistance(lower, FoldName(c))
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	content := "content." + name
	if bestDist <= max(1, len(name)/3) {
		return fmt.Sprintf("unknown field %q; did you mean %s? (a content property is written %s)", name, best, content), best
	}
	return fmt.Sprintf("unknown field %q; a content property is written %s (the node fields are %s)",
		name, content, strings.Join(nodeFields[:], ", ")), content
}

// editDistance is the optimal-string-alignment distance between a and b,
// in bytes (field names are ASCII): insertions, deletions, substitutions and
// transpositions of neighbours each cost one, so nmae is one from name.
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}

// fieldError is the *ParseError of an unknown field name at off in src.
func fieldError(src string, off int, name string, withQualifiers bool) *ParseError {
	msg, suggestion := unknownField(name, withQualifiers)
	e := &ParseError{Query: src, Offset: off, Msg: msg}
	if suggestion != "" {
		e.Field, e.Suggestion = name, suggestion
	}
	return e
}
