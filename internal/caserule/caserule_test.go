package caserule_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// banned are the case mappings of the standard library that follow Unicode
// rules, by import path.
var banned = map[string][]string{
	"strings": {"EqualFold", "ToLower", "ToUpper", "ToTitle", "Title", "ToLowerSpecial", "ToUpperSpecial", "ToTitleSpecial"},
	"bytes":   {"EqualFold", "ToLower", "ToUpper", "ToTitle", "Title", "ToLowerSpecial", "ToUpperSpecial", "ToTitleSpecial"},
	"unicode": {"SimpleFold", "ToLower", "ToUpper", "ToTitle", "To"},
}

// use is one call site, named by file (slash-separated, from the module
// root) and the function declaration that holds it ("" at package level).
type use struct{ file, fn, call string }

func (u use) key() string { return u.file + " " + u.fn }

// unicodeUses returns every use of a banned function in the module's
// non-test Go files.
func unicodeUses(t *testing.T, root string) []use {
	var uses []use
	testkit.ModuleFiles(t, root, nil, func(file string, f *ast.File) {
		uses = append(uses, usesIn(f, file)...)
	})
	return uses
}

// usesIn returns the banned calls of f, resolved through f's imports (so a
// renamed import is caught and a local variable named strings is not).
func usesIn(f *ast.File, file string) []use {
	names := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := banned[p]; !ok {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
	}
	var uses []use
	visit := func(fn string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if p, ok := names[x.Name]; ok && slices.Contains(banned[p], sel.Sel.Name) {
				uses = append(uses, use{file, fn, p + "." + sel.Sel.Name})
			}
			return true
		})
	}
	for _, d := range f.Decls {
		fn := ""
		if fd, ok := d.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				fn = recvName(fd.Recv.List[0].Type) + "." + fn
			}
		}
		visit(fn, d)
	}
	return uses
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}

// queryRule is why mesh's query matching may use Unicode case mapping.
const queryRule = "the query language's text rule, not a name comparison: a query's values match node fields " +
	"with strings.ToLower rune by rune and content keys with strings.EqualFold (Query.Matches); pgstore generates " +
	"the same rule in SQL (sqlgen) and the indexes, routers and live queries key by it so they find what Matches " +
	"finds. What a reader may see is decided by the access fold, which folds ASCII case only"

// allowed are the uses of Unicode case mapping outside tests that are no
// name comparison, by "file function", each with why.
var allowed = map[string]string{
	"mesh/match.go Query.Matches":                                              queryRule,
	"mesh/match.go Query.NodeTypes":                                            queryRule,
	"mesh/match.go collectValues":                                              queryRule,
	"mesh/match.go compareValues":                                              queryRule + " (sorting by a value)",
	"mesh/match.go inScope":                                                    queryRule,
	"mesh/match.go nodeTypesOf":                                                queryRule,
	"mesh/match.go nodeView.haystack":                                          queryRule + " (free text)",
	"mesh/match.go sortKey":                                                    queryRule + " (sorting by a value)",
	"mesh/match.go valueMatches":                                               queryRule,
	"mesh/project.go matchingKeys":                                             queryRule + " (select:content.x finds the key as a filter does)",
	"mesh/router.go NewRouter":                                                 queryRule + " (routes by node type as Matches matches it)",
	"mesh/router.go Router.NeverNarrowed":                                      queryRule + " (routes by node type as Matches matches it)",
	"mesh/router.go Router.declare":                                            queryRule + " (routes by node type as Matches matches it)",
	"mesh/router.go Router.locationsFor":                                       queryRule + " (routes by node type as Matches matches it)",
	"mesh/internal/liveindex/liveindex.go anchorsOf":                           queryRule + " (live-query index)",
	"mesh/internal/liveindex/liveindex.go lowerAll":                            queryRule + " (live-query index)",
	"mesh/memstore/anchor.go newAnchorFilter":                                  queryRule,
	"mesh/memstore/index.go appendLower":                                       queryRule + " (the index's buckets; Matches decides)",
	"mesh/memstore/index.go partition.candidates":                              queryRule + " (the index's buckets; Matches decides)",
	"mesh/memstore/index.go partition.put":                                     queryRule + " (the index's buckets; Matches decides)",
	"mesh/memstore/index.go partition.remove":                                  queryRule + " (the index's buckets; Matches decides)",
	"mesh/memstore/index.go partition.sizeHint":                                queryRule + " (the index's buckets; Matches decides)",
	"mesh/memstore/live.go Store.classify":                                     queryRule + " (live-query index)",
	"mesh/memstore/read.go newLiveQuery":                                       queryRule + " (live-query index)",
	"mesh/pgstore/live.go Store.dispatch":                                      queryRule + " (live-query index)",
	"mesh/pgstore/live.go liveQuery.concerns":                                  queryRule + " (live-query index)",
	"mesh/pgstore/live.go newLiveQuery":                                        queryRule + " (live-query index)",
	"mesh/pgstore/internal/sqlgen/anchor.go builder.scope":                     queryRule + " (in SQL)",
	"mesh/pgstore/internal/sqlgen/fold.go computeLowerPreimage":                queryRule + " (in SQL: the runes that lower-case to one)",
	"mesh/pgstore/internal/sqlgen/fold.go foldOrbit":                           queryRule + " (in SQL: the runes EqualFold joins)",
	"mesh/pgstore/internal/sqlgen/fold.go lowerPattern":                        queryRule + " (in SQL)",
	"mesh/pgstore/internal/sqlgen/keys.go Fold":                                queryRule + " (in SQL)",
	"mesh/pgstore/internal/sqlgen/lastmodified.go builder.lastModifiedCompare": queryRule + " (in SQL)",
	"mesh/pgstore/internal/sqlgen/typed.go builder.versionCompare":             queryRule + " (in SQL)",

	"mesh/meshtest/names.go suite.partitionNames": "a conformance suite's control: shows that Unicode lower-casing spells \u212Aate kate",
	"registry/landing/archive.go collisionKey": "archive entries: the volume decides what collides, so two entries any Unicode fold " +
		"makes one are refused (the wider rule of docs/security.md)",
	"registry/landing/names.go isReservedDeviceName": "refuses Windows device names: Unicode upper-casing refuses more spellings (ı, ſ), never fewer",
	"registry/publish.go Server.publishGate": "refuses a misspelt version or tier parameter with a 400: Unicode folding refuses " +
		"more spellings (verſion=), never lands one",
}

// TestNoCodeFoldsANameWithUnicodeRules: no non-test Go file of the module
// calls a Unicode case mapping (strings.EqualFold, ToLower, ToUpper,
// ToTitle, Title; their Special, bytes and unicode counterparts) outside
// the allow list above, whose every entry says why it is no name
// comparison: names fold by mesh.EqualNames and mesh.FoldName (or a local
// copy where a package imports no mesh: auth/access, registry/landing,
// examples/bell/bellstate), so a comparison added later cannot slip past
// docs/security.md's "One case rule for names". An entry no call needs any
// more is an error too, so the list stays the list of what is left.
//
// It replaces auth's TestNoCodeInAuthFoldsWithUnicodeRules, which scanned
// auth and auth/access only.
//
// Negative control, run on main before this change: it listed 72 calls, in
// notifications (ParseType, Service.Create, MarkRead, Prune, the bell's
// grouping), registry (publishAuthorized, canonicalTier, the changes feed,
// the client's plugin keys, digests and hosts, parseStamp), mesh's parser
// (ParseScope, ParseState, keywords, field names, satelliteTable),
// examples/bell, bellstate, bellload and loadtest, testkit and pgtest.
func TestNoCodeFoldsANameWithUnicodeRules(t *testing.T) {
	used := map[string]bool{}
	var found []string
	for _, u := range unicodeUses(t, testkit.ModuleRoot(t)) {
		if _, ok := allowed[u.key()]; ok {
			used[u.key()] = true
			continue
		}
		found = append(found, u.key()+": "+u.call)
	}
	assert.Empty(t, found, "compare names with mesh.EqualNames / mesh.FoldName, or add the use to allowed with why it is no name comparison")
	for k, why := range allowed {
		assert.NotEmpty(t, why, "%s is allowed without a reason", k)
		assert.True(t, used[k], "%s is allowed but calls no Unicode case mapping any more: take it off the list", k)
	}
}

// The scan resolves a call through the file's imports: a renamed import of
// strings is caught, a local variable named strings is not, and the
// enclosing function names the use.
func TestTheScanFindsACallThroughARenamedImportAndNotALocalName(t *testing.T) {
	const src = `package p

import (
	str "strings"
	"unicode"
)

type T struct{}

func (*T) m(a, b string) bool { return str.EqualFold(a, b) }

func f(r rune) rune {
	var strings struct{ ToLower func(string) string }
	_ = strings
	return unicode.SimpleFold(r)
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	assert.Equal(t, []use{{"p.go", "T.m", "strings.EqualFold"}, {"p.go", "f", "unicode.SimpleFold"}}, usesIn(f, "p.go"))
}
