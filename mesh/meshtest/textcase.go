package meshtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// caseNode is one node of the textCase fixture: its path is acme/<path>.
type caseNode struct{ path, nodeType, name, content string }

// caseFixture holds values whose case mapping is not ASCII's, each beside
// the spellings a careless fold would make equal to it: U+212A KELVIN SIGN
// (lower-cases to 'k'), U+0130 'İ' (lower-cases to 'i' in Go; "i̇" in
// PostgreSQL's lower() under ICU), the dotless 'ı' (its own lower case), the
// long 's' U+017F (its own lower case, but case-folds with 's'), U+1E9E 'ẞ'
// (lower-cases to 'ß', never to "ss"), 'Σ' (lower-cases to 'σ', never to
// the final 'ς', with which it case-folds), the titlecase digraph 'ǅ', and
// 'Ⱥ' whose lower case 'ⱥ' is a byte longer (as the Kelvin sign's is two
// bytes shorter).
func caseFixture() []caseNode {
	return []caseNode{
		{"Fold/kelvin-sign", "Note", "\u212Aelvin", `{"unit":"\u212A","\u212Aind":"a"}`},
		{"Fold/kelvin-ascii", "Note", "kelvin", `{"unit":"k"}`},
		{"Fold/izmir-dot", "\u0130tem", "\u0130zmir", `{"city":"\u0130ZM\u0130R","\u0130d":"a"}`},
		{"Fold/izmir-dotless", "\u0131tem", "\u0131zmir", `{"city":"\u0131zmir"}`},
		{"Fold/izmir-ascii", "Item", "Izmir", `{"city":"izmir"}`},
		{"Fold/sun-long", "Note", "\u017Fun", `{"\u017Ftate":"on"}`},
		{"Fold/sun-ascii", "Note", "sun", `{"STATE":"off"}`},
		{"Fold/strasse-capital", "Note", "STRA\u1E9EE", ""},
		{"Fold/strasse-sharp", "Note", "stra\u00DFe", ""},
		{"Fold/strasse-ss", "Note", "strasse", ""},
		{"Fold/odos-capital", "Note", "\u039F\u0394\u039F\u03A3", `{"\u039F\u0394\u039F\u03A3":"upper"}`},
		{"Fold/odos-medial", "Note", "\u03BF\u03B4\u03BF\u03C3", ""},
		{"Fold/odos-final", "Note", "\u03BF\u03B4\u03BF\u03C2", ""},
		{"Fold/dz-title", "Note", "\u01C5emal", `{"\u01C5":"t"}`},
		{"Fold/dz-small", "Note", "\u01C6emal", ""},
		{"Fold/a-stroke", "Note", "\u023A", ""},
		{"Fold/a-stroke-small", "Note", "\u2C65", ""},
		// Paths: ids and namespaces spelt with the same letters.
		{"Ids/\u212Aey", "Note", "", ""},
		{"Ids/key", "Note", "", ""},
		{"Ids/\u0130d", "Note", "", ""},
		{"Ids/id", "Note", "", ""},
		{"Ids/\u0131d", "Note", "", ""},
		{"Ids/\u1E9E", "Note", "", ""},
		{"Ids/\u00DF", "Note", "", ""},
		{"Ids/\u017Fx", "Note", "", ""},
		{"Ids/sx", "Note", "", ""},
		{"\u03A3/a", "Note", "", ""},
		{"\u03C3/b", "Note", "", ""},
		{"\u03C2/c", "Note", "", ""},
	}
}

// caseQuery is a query of the textCase table and the paths (without the
// leading acme/) the documented rule selects.
type caseQuery struct {
	q    string
	want []string
}

// caseQueries: the query language's text rule (mesh.Query.Matches;
// docs/security.md, "One case rule for names", on query values): a value
// matches a text field (name, nodeType, id, namespace, path, mainNode, a
// content value, a free-text term, an anchor) when both lower-case
// (strings.ToLower, rune by rune) to the same text; a content key matches a
// key strings.EqualFold reports equal (simple Unicode case folding) when
// the object has no key spelt exactly so. Each want below is worked out by
// hand from that rule.
func caseQueries() []caseQuery {
	const in = "namespace:acme/Fold "
	everyFold := func(but ...string) []string {
		var out []string
		for _, n := range caseFixture() {
			if strings.HasPrefix(n.path, "Fold/") && !slices.Contains(but, n.path) {
				out = append(out, n.path)
			}
		}
		return out
	}
	return []caseQuery{
		// Names: equality.
		{in + "name:KELVIN", []string{"Fold/kelvin-sign", "Fold/kelvin-ascii"}},
		{in + "name:\u212AELVIN", []string{"Fold/kelvin-sign", "Fold/kelvin-ascii"}},
		{in + "name:\u0130ZM\u0130R", []string{"Fold/izmir-dot", "Fold/izmir-ascii"}},
		{in + "name:IZMIR", []string{"Fold/izmir-dot", "Fold/izmir-ascii"}},
		{in + "name:\u0131ZMIR", []string{"Fold/izmir-dotless"}},
		{in + "name:SUN", []string{"Fold/sun-ascii"}},
		{in + "name:\u017FUN", []string{"Fold/sun-long"}},
		{in + "name:STRASSE", []string{"Fold/strasse-ss"}},
		{in + "name:STRA\u1E9EE", []string{"Fold/strasse-capital", "Fold/strasse-sharp"}},
		{in + "name:\u03BF\u03B4\u03BF\u03C3", []string{"Fold/odos-capital", "Fold/odos-medial"}},
		{in + "name:\u03BF\u03B4\u03BF\u03C2", []string{"Fold/odos-final"}},
		{in + "name:\u01C4EMAL", []string{"Fold/dz-title", "Fold/dz-small"}},
		{in + "name:\u023A", []string{"Fold/a-stroke", "Fold/a-stroke-small"}},
		{in + "name:\u2C65", []string{"Fold/a-stroke", "Fold/a-stroke-small"}},
		// Names: globs (a literal prefix, a suffix), lists, negation.
		{in + "name:*ELVIN", []string{"Fold/kelvin-sign", "Fold/kelvin-ascii"}},
		{in + "name:\u0130Z*", []string{"Fold/izmir-dot", "Fold/izmir-ascii"}},
		{in + "name:\u2C65*", []string{"Fold/a-stroke", "Fold/a-stroke-small"}},
		{in + "name:*\u1E9Ee", []string{"Fold/strasse-capital", "Fold/strasse-sharp"}},
		{in + "name:*\u03A3", []string{"Fold/odos-capital", "Fold/odos-medial"}},
		{in + "name:\u017Fun|\u0131zmir", []string{"Fold/sun-long", "Fold/izmir-dotless"}},
		{in + "-name:\u0130ZMIR", everyFold("Fold/izmir-dot", "Fold/izmir-ascii")},
		// Node types.
		{in + "nodeType:\u0130TEM", []string{"Fold/izmir-dot", "Fold/izmir-ascii"}},
		{in + "nodeType:\u0131TEM", []string{"Fold/izmir-dotless"}},
		{in + "-nodeType:ITEM", everyFold("Fold/izmir-dot", "Fold/izmir-ascii")},
		// Content values.
		{in + "content.city:izmir", []string{"Fold/izmir-dot", "Fold/izmir-ascii"}},
		{in + "content.city:\u0131*", []string{"Fold/izmir-dotless"}},
		{in + "content.unit:K", []string{"Fold/kelvin-sign", "Fold/kelvin-ascii"}},
		// Content keys (a query names them in ASCII): EqualFold, which
		// joins ſ with s and the Kelvin sign with k, but leaves İ alone (its
		// full fold is "i̇", two runes, and it has no simple one).
		{in + "content.state:on", []string{"Fold/sun-long"}},
		{in + "content.state:off", []string{"Fold/sun-ascii"}},
		{in + "content.kind:a", []string{"Fold/kelvin-sign"}},
		{in + "content.id:a", nil},
		// Free text.
		{in + "\u212AELVIN", []string{"Fold/kelvin-sign", "Fold/kelvin-ascii"}},
		{in + "\u017Fun", []string{"Fold/sun-long"}},
		{in + "STRA\u1E9EE", []string{"Fold/strasse-capital", "Fold/strasse-sharp"}},
		// Paths and ids.
		{"path:acme/ids/KEY", []string{"Ids/\u212Aey", "Ids/key"}},
		{"path:ACME/IDS/\u0130D", []string{"Ids/\u0130d", "Ids/id"}},
		{"path:acme/Ids/\u0131D", []string{"Ids/\u0131d"}},
		{"[acme/Ids/\u1E9E]", []string{"Ids/\u1E9E", "Ids/\u00DF"}},
		{"path:acme/Ids/SX", []string{"Ids/sx"}},
		{"path:acme/Ids/\u017FX", []string{"Ids/\u017Fx"}},
		{"namespace:acme/ids id:\u212A*", []string{"Ids/\u212Aey", "Ids/key"}},
		{"namespace:acme/ids id:\u0130D|SX", []string{"Ids/\u0130d", "Ids/id", "Ids/sx"}},
		{"namespace:acme/ids id:*\u00DF", []string{"Ids/\u1E9E", "Ids/\u00DF"}},
		{"path:acme/IDS/*\u1E9E", []string{"Ids/\u1E9E", "Ids/\u00DF"}},
		// Namespaces.
		{"namespace:acme/\u03C3", []string{"\u03A3/a", "\u03C3/b"}},
		{"namespace:acme/\u03C2", []string{"\u03C2/c"}},
		{"path:acme/\u03A3 scope:subtree", []string{"\u03A3/a", "\u03C3/b"}},
		{"path:acme/\u03A3 scope:descendants", []string{"\u03A3/a", "\u03C3/b"}},
		{"path:acme/\u03C3/A scope:hierarchy", []string{"\u03A3/a"}},
	}
}

// textCase checks that every store answers queries on values with
// non-ASCII case mappings as the query language's text rule says (and so
// that the stores agree): pgstore matches in SQL what memstore matches in
// Go, on whatever locale the server has. The table's answers are worked
// out by hand; mesh.Query.Matches is asserted to give them too, so the
// table is the rule.
//
// Run on both stores before any change (memstore; pgstore on pgtest's
// server, locale C, and by hand on an ICU tr-TR database, where lower()
// folds 'I' to 'ı' and the Kelvin sign to 'k'), every query was answered as
// the table says: the stores agreed, as pgstore never asks the server to
// fold (sqlgen folds in Go and spells case variants out in its patterns).
//
// Negative controls, run by hand: with sqlgen.Fold folding ASCII only
// (mesh.FoldName), pgstore failed 27 queries (name:KELVIN, name:İZMİR,
// nodeType:İTEM, path:acme/ids/KEY, namespace:acme/σ, ...); with
// content keys matched by lower(key) = lower(segment) instead of the
// EqualFold pattern, pgstore failed content.state:on and content.kind:a
// under locale C, and content.state:on and content.id:a under tr-TR; with
// memstore's index keying ids by mesh.FoldName, memstore failed
// path:acme/ids/KEY, path:ACME/IDS/İD and [acme/Ids/ẞ].
func (s *suite) textCase(t testing.TB, svc mesh.Store) {
	fixture := caseFixture()
	nodes := make([]mesh.Node, len(fixture))
	for i, c := range fixture {
		n := named(node("acme/"+c.path, c.nodeType), c.name)
		if c.content != "" {
			n = withContent(n, c.content)
		}
		nodes[i] = put(t, svc, n)
	}
	for _, c := range caseQueries() {
		want := make([]string, len(c.want))
		for i, p := range c.want {
			want[i] = "acme/" + p
		}
		q, err := mesh.Parse(c.q)
		require.NoError(t, err, "query %s", c.q)
		var byRule []string
		for _, n := range nodes {
			if q.Matches(n) {
				byRule = append(byRule, n.Path)
			}
		}
		assert.ElementsMatch(t, want, byRule, "the table states mesh.Query.Matches: query %s", c.q)

		got := initialOf(t, s.bound, svc, c.q)
		assert.ElementsMatch(t, want, pathsOf(got.Items), "query %s", c.q)
	}

	// A live query sees a write as its Initial would: the type İtem is
	// item, ıtem is not (the marker Item shows the ıtem write was passed).
	w := watchQuery(t, s.bound, svc, "namespace:acme/Live nodeType:item")
	w.await(t, "the Initial", func(c mesh.Change) bool { return c.Kind == mesh.Initial })
	put(t, svc, node("acme/Live/dotless", "\u0131tem"))
	put(t, svc, node("acme/Live/dot", "\u0130tem"))
	put(t, svc, node("acme/Live/marker", "Item"))
	w.await(t, "Added acme/Live/marker", kindOn(mesh.Added, "acme/Live/marker"))
	var frames []string
	for _, c := range w.received(t) {
		for _, n := range c.Items {
			frames = append(frames, c.Kind.String()+" "+n.Path)
		}
	}
	assert.Equal(t, []string{"added acme/Live/dot", "added acme/Live/marker"}, frames,
		"the live query takes \u0130tem as item and \u0131tem as not")
}
