package sqlgen

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Case-insensitive matching is done with PostgreSQL regular expressions whose
// every character is spelled out, never with lower(), ILIKE or ~*: those
// follow the server's locale, which does not agree with Go's case mapping
// (the Kelvin sign K lower-cases to k in Go but not under the C locale). A
// pattern built here names, for each character of the lower-cased query
// value, exactly the characters Go lower-cases to it, so it matches the same
// strings on every server. Patterns are sent as parameters and hold only
// ASCII letters, digits and \U escapes, so a value cannot change their shape.

// regexRune appends r to b as a regular-expression atom that matches r alone.
func regexRune(b *strings.Builder, r rune) {
	if r < 0x80 && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
		b.WriteRune(r)
		return
	}
	fmt.Fprintf(b, `\U%08X`, r)
}

// regexClass appends an atom matching any rune of set (which is not empty).
func regexClass(b *strings.Builder, set []rune) {
	if len(set) == 1 {
		regexRune(b, set[0])
		return
	}
	b.WriteByte('[')
	for _, r := range set {
		regexRune(b, r)
	}
	b.WriteByte(']')
}

// lowerPreimage returns, in ascending order, every rune that
// unicode.ToLower maps to c. unicode.ToLower consults only
// unicode.CaseRanges, so the candidates are c itself and, for each case
// range, the one rune (or pair, for alternating ranges) its delta maps onto c.
func lowerPreimage(c rune) []rune {
	if 0 <= c && c < 0x80 {
		return asciiPreimages()[c] // most query text; shared, never modified
	}
	return computeLowerPreimage(c)
}

// asciiPreimages holds lowerPreimage of each ASCII rune, computed once:
// scanning every case range per character was most of Build's time.
var asciiPreimages = sync.OnceValue(func() *[0x80][]rune {
	var t [0x80][]rune
	for c := range rune(0x80) {
		t[c] = computeLowerPreimage(c)
	}
	return &t
})

func computeLowerPreimage(c rune) []rune {
	var set []rune
	if unicode.ToLower(c) == c {
		set = append(set, c)
	}
	for _, cr := range unicode.CaseRanges {
		d := cr.Delta[unicode.LowerCase]
		var cands []rune
		switch d {
		case 0:
			continue
		case unicode.UpperLower:
			cands = []rune{c - 1, c}
		default:
			cands = []rune{c - d}
		}
		for _, r := range cands {
			if r != c && uint32(cr.Lo) <= uint32(r) && uint32(r) <= uint32(cr.Hi) && unicode.ToLower(r) == c {
				set = append(set, r)
			}
		}
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// foldOrbit returns the runes strings.EqualFold treats as equal to r: its
// unicode.SimpleFold orbit, in ascending order.
func foldOrbit(r rune) []rune {
	set := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		set = append(set, f)
	}
	slices.Sort(set)
	return set
}

// lowerPattern appends the regular expression (without anchors) matching
// the strings h for which mesh compares strings.ToLower(h) equal to
// strings.ToLower(v), rune by rune. With glob, a * in v matches any run of
// characters, as mesh's glob does.
func lowerPattern(b *strings.Builder, v string, glob bool) {
	for _, c := range strings.ToLower(v) {
		if glob && c == '*' {
			b.WriteString(".*")
			continue
		}
		regexClass(b, lowerPreimage(c))
	}
}

// maxGlobStars bounds the stars of a glob pushed into SQL. Each star is a
// run the regular expression engine may try at every position, so a value
// with hundreds of them costs the shared database seconds per thousand
// rows; such a value is matched in Go instead.
const maxGlobStars = 16

func tooManyStars(v string) bool { return strings.Count(v, "*") > maxGlobStars }

// PostgreSQL refuses a regular expression past a size ("regular expression
// is too complex", from some 26,000 spelled-out characters), which would end
// the read with an error where mesh answers. A value longer than
// maxPatternRunes, or a pattern longer than maxPatternBytes (an in-list, an
// anchor's ancestors), is matched in Go instead.
const (
	maxPatternRunes = 1024
	maxPatternBytes = 32 << 10
)

func tooLong(v string) bool { return utf8.RuneCountInString(v) > maxPatternRunes }

// tooHard reports a value the database is not asked to match.
func tooHard(v string) bool { return tooManyStars(v) || tooLong(v) }

// tooHardWhy is the residual of a value or pattern matched in Go.
const tooHardWhy = "a glob with more stars, or a value longer, than the database is asked to match"

// fullMatch returns a regular expression matching exactly the strings that
// one of alts (unanchored alternatives) matches whole. With no alternatives
// it returns "", which callers turn into FALSE.
func fullMatch(alts []string) string {
	if len(alts) == 0 {
		return ""
	}
	return "^(?:" + strings.Join(alts, "|") + ")$"
}

// equalFoldPattern returns the anchored expression matching the strings
// strings.EqualFold reports equal to key (how mesh finds a content property
// whose key differs in case).
func equalFoldPattern(key string) string {
	var b strings.Builder
	b.WriteString("^(?:")
	for _, r := range key {
		regexClass(&b, foldOrbit(r))
	}
	b.WriteString(")$")
	return b.String()
}
