package sqlgen

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The patterns are only as exact as these two tables, so both are checked
// against Go itself. unicode.ToLower, ToUpper, ToTitle and SimpleFold
// consult only unicode.CaseRanges, so a rune outside every range, and not
// the image of one inside, has no case relation to any other rune: the
// tests check every rune that is in a range or an image of one, and every
// 97th rune besides.
func caseRelevantRunes() []rune {
	set := map[rune]bool{}
	for _, cr := range unicode.CaseRanges {
		for r := rune(cr.Lo); r <= rune(cr.Hi); r++ {
			set[r] = true
			set[unicode.ToLower(r)] = true
			set[unicode.ToUpper(r)] = true
			set[unicode.ToTitle(r)] = true
			set[unicode.SimpleFold(r)] = true
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r += 97 {
		set[r] = true
	}
	var out []rune
	for r := range set {
		if utf8.ValidRune(r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func TestLowerPreimageListsEveryRuneGoLowerCasesToIt(t *testing.T) {
	want := map[rune][]rune{}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) {
			c := unicode.ToLower(r)
			want[c] = append(want[c], r)
		}
	}
	for _, c := range caseRelevantRunes() {
		rs := want[c]
		slices.Sort(rs)
		if !slices.Equal(lowerPreimage(c), rs) {
			t.Fatalf("lowerPreimage(%U) = %U, want %U", c, lowerPreimage(c), rs)
		}
	}
	// Negative control: the fold orbit, the obvious shortcut, misses
	// U+0130 (İ), which Go lower-cases to i, so a pattern built from it
	// would drop rows mesh matches.
	assert.Contains(t, lowerPreimage('i'), rune(0x130))
	assert.NotContains(t, foldOrbit('i'), rune(0x130))
	assert.Contains(t, lowerPreimage('k'), rune(0x212A), "the Kelvin sign lower-cases to k")
}

func TestFoldOrbitListsExactlyTheRunesEqualFoldAccepts(t *testing.T) {
	runes := caseRelevantRunes()
	for _, r := range runes {
		orbit := foldOrbit(r)
		for _, o := range orbit {
			require.True(t, strings.EqualFold(string(r), string(o)), "%U and %U", r, o)
		}
		for _, v := range []rune{unicode.ToUpper(r), unicode.ToLower(r), unicode.ToTitle(r)} {
			if strings.EqualFold(string(r), string(v)) {
				require.Contains(t, orbit, v, "%U", r)
			}
		}
	}
	// Negative control: lower-casing both sides is not EqualFold; the long
	// s (ſ) folds to s without lower-casing to it.
	assert.Contains(t, foldOrbit('s'), rune(0x17F))
	assert.NotContains(t, lowerPreimage('s'), rune(0x17F))
}

func TestPatternsHoldOnlyASCIISoNoValueShapesThem(t *testing.T) {
	var b strings.Builder
	lowerPattern(&b, "a'\"; DROP TABLE x; --\\%_*İ\u212A", true)
	p := b.String()
	for i := 0; i < len(p); i++ {
		require.Less(t, p[i], byte(0x80))
	}
	assert.NotContains(t, p, "'")
	assert.NotContains(t, p, ";")
	assert.NotContains(t, p, "%")
	assert.Contains(t, p, ".*", "a * in a glob becomes .*")
}
