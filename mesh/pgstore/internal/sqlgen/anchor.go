package sqlgen

import (
	"strings"

	"github.com/meshrx/meshrx/mesh"
)

// anchor compiles where the query looks: each of Paths, or Path, under
// Scope. mesh compares anchors case-insensitively with * as a glob, so each
// scope becomes one spelled-out pattern over path (or namespace).
func (b *builder) anchor(q *mesh.Query) pred {
	if len(q.Paths) > 0 {
		ps := make([]pred, len(q.Paths))
		for i, p := range q.Paths {
			ps[i] = b.scope(q.Scope, p)
		}
		return anyOf(ps...)
	}
	if q.Path == "" && q.Scope == mesh.ScopeExact {
		return predTrue // no anchor
	}
	return b.scope(q.Scope, q.Path)
}

// slash is the pattern atom for '/', which nothing else lower-cases to.
const slash = `\U0000002F`

func (b *builder) scope(s mesh.Scope, anchor string) pred {
	if tooHard(anchor) && s <= mesh.ScopeHierarchy {
		b.residuals = append(b.residuals, "anchor "+anchor+": "+tooHardWhy)
		return superset
	}
	a := []rune(strings.ToLower(anchor))
	col := "n.path"
	var alts []string
	switch s {
	case mesh.ScopeExact:
		alts = []string{globAtoms(a)}
	case mesh.ScopeChildren:
		col = "n.namespace"
		alts = []string{globAtoms(a)}
	case mesh.ScopeDescendants:
		alts = descendantAlts(a)
	case mesh.ScopeSubtree:
		alts = append([]string{globAtoms(a)}, descendantAlts(a)...)
	case mesh.ScopeAncestors:
		alts = ancestorAlts(a)
	case mesh.ScopeHierarchy:
		alts = append(ancestorAlts(a), globAtoms(a))
		alts = append(alts, descendantAlts(a)...)
	}
	re := fullMatch(alts)
	if re == "" {
		return predFalse // an unknown scope selects nothing in mesh either
	}
	spelled := func() pred {
		if len(re) > maxPatternBytes {
			b.residuals = append(b.residuals, "anchor "+anchor+": "+tooHardWhy)
			return superset
		}
		return exactly(col + " ~ " + b.param(re, "text"))
	}
	key, k, ok := keyedScope(s, anchor)
	if !ok {
		return spelled()
	}
	return b.keyedOr(func() string { return b.keyPred(key, k) }, spelled)
}

// keyedScope returns the anchor's scope as folded values of the path (or
// namespace) key: the exact and children scopes for any anchor, globs
// included; the others for an anchor without globs, as equalities (its
// ancestors, itself) and the prefix anchor+"/" (its descendants). ok is
// false when only the spelled-out pattern expresses the scope.
func keyedScope(s mesh.Scope, anchor string) (key string, k keyed, ok bool) {
	a := Fold(anchor)
	switch s {
	case mesh.ScopeExact:
		k.addValue(anchor)
		return "n.path_key", k, true
	case mesh.ScopeChildren:
		k.addValue(anchor)
		return "n.ns_key", k, true
	}
	if a == "" || strings.Contains(a, "*") {
		return "", k, false
	}
	below := a + "/*"
	var ancestors []string
	for i := range len(a) {
		if a[i] == '/' && i+1 < len(a) {
			ancestors = append(ancestors, a[:i])
		}
	}
	switch s {
	case mesh.ScopeDescendants:
		k.globs = []string{below}
	case mesh.ScopeSubtree:
		k.eq, k.globs = []string{a}, []string{below}
	case mesh.ScopeAncestors:
		k.eq = ancestors
	case mesh.ScopeHierarchy:
		k.eq, k.globs = append(ancestors, a), []string{below}
	default:
		return "", k, false
	}
	if k.empty() {
		return "", k, false
	}
	return "n.path_key", k, true
}

// globAtoms renders lower-cased glob runes: * matches any run, any other
// rune matches the runes that lower-case to it.
func globAtoms(a []rune) string {
	var b strings.Builder
	for _, c := range a {
		if c == '*' {
			b.WriteString(".*")
			continue
		}
		regexClass(&b, lowerPreimage(c))
	}
	return b.String()
}

// descendantAlts: a path strictly below the anchor is a prefix the anchor
// matches, then '/', then anything. An anchor that matches the empty string
// (only stars) is below-matched by every path.
func descendantAlts(a []rune) []string {
	alts := []string{globAtoms(a) + slash + ".*"}
	if strings.Trim(string(a), "*") == "" {
		alts = append(alts, ".+")
	}
	return alts
}

// ancestorAlts: a path is a strict ancestor when the anchor can match the
// path, a '/', and at least one more rune. Either a literal '/' of the
// anchor matches that slash (and something follows it in the anchor), so
// the path matches the anchor up to there; or a * swallows the slash, so
// the path matches the anchor up to that star followed by anything.
func ancestorAlts(a []rune) []string {
	var alts []string
	for k, c := range a {
		switch {
		case c == '/' && k+1 < len(a):
			alts = append(alts, globAtoms(a[:k]))
		case c == '*':
			alts = append(alts, globAtoms(a[:k])+".*")
		}
	}
	return alts
}
