package mesh

import (
	"errors"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// allowListCeiling is the number of shapes mesh/unanchored-queries.allow may
// hold. The list only shrinks: lower this when you delete a line; never raise it.
const allowListCeiling = 0

// checkAllowListCeiling says whether an allow list of n entries keeps to ceiling.
func checkAllowListCeiling(n, ceiling int) error {
	switch {
	case n > ceiling:
		return fmt.Errorf("unanchored-queries.allow has %d shapes but the ceiling is %d: the list only shrinks; "+
			"anchor the new query with path: or namespace:, or declare it with partitions:all", n, ceiling)
	case n < ceiling:
		return fmt.Errorf("unanchored-queries.allow has %d shapes, under the ceiling of %d: "+
			"lower allowListCeiling to %d so the list cannot grow back", n, ceiling, n)
	}
	return nil
}

// shapesWithoutCaller returns the listed shapes that are the shape of none of
// the query literals.
func shapesWithoutCaller(allow *AllowList, literals []string) []string {
	called := map[string]bool{}
	for _, lit := range literals {
		if q, err := Parse(lit); err == nil && looksLikeQuery(q) {
			called[DescribeShape(q)] = true
		}
	}
	var missing []string
	for _, s := range allow.Shapes() {
		if !called[s] {
			missing = append(missing, s)
		}
	}
	return missing
}

// looksLikeQuery tells a query literal from prose: it has a qualifier and no
// free text.
func looksLikeQuery(q *Query) bool {
	return len(q.Text) == 0 && (q.Filter != nil || q.Path != "" || len(q.Paths) > 0 || q.Scope != ScopeExact ||
		q.AllPartitions || q.Sort != Sort{} || q.Limit != 0 || len(q.Select) > 0)
}

// queryLiterals returns the string literals of the non-test .go files under
// root, skipping testdata, vendor and hidden directories below it.
func queryLiterals(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we walked
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		// A file that does not parse still yields the literals before the
		// error; a caller missed that way fails the test, never passes it.
		f, _ := goparser.ParseFile(token.NewFileSet(), path, nil, goparser.SkipObjectResolution)
		if f == nil {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, s)
				}
			}
			return true
		})
		return nil
	})
	return out, err
}

func TestTheAllowListNeverGrowsPastItsCeiling(t *testing.T) {
	allow, err := DefaultAllowList()
	require.NoError(t, err)
	require.NoError(t, checkAllowListCeiling(allow.Len(), allowListCeiling))

	// Negative controls: one synthetic line too many fails; a shrunk list asks
	// for the ceiling to come down.
	grown, err := ParseAllowList(strings.NewReader(embeddedAllowList + "nodeType:Extra path:- scope:exact\n"))
	require.NoError(t, err)
	err = checkAllowListCeiling(grown.Len(), allowListCeiling)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the list only shrinks")
	err = checkAllowListCeiling(2, 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lower allowListCeiling to 2")
}

func TestEveryAllowedShapeHasACaller(t *testing.T) {
	allow, err := DefaultAllowList()
	require.NoError(t, err)
	literals, err := queryLiterals(testkit.ModuleRoot(t))
	require.NoError(t, err)
	assert.Empty(t, shapesWithoutCaller(allow, literals), "listed shapes that no query literal in the module produces; delete their lines")

	// Negative control: a listed shape with no caller is reported, and a
	// caller makes it go away.
	ghost, err := ParseAllowList(strings.NewReader("nodeType:Ghost path:- scope:exact\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"nodeType:Ghost path:- scope:exact"}, shapesWithoutCaller(ghost, literals))
	assert.Empty(t, shapesWithoutCaller(ghost, append(literals, "nodeType:Ghost")))
	// Prose that happens to parse does not count as a caller.
	assert.NotEmpty(t, shapesWithoutCaller(ghost, []string{"Ghost"}))
}

func TestTheCallerWalkReadsNonTestFilesOnly(t *testing.T) {
	literals, err := queryLiterals(filepath.Join("testdata", "callers"))
	require.NoError(t, err)
	allow, err := ParseAllowList(strings.NewReader("nodeType:Widget path:- scope:children\nnodeType:Gadget path:- scope:exact\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"nodeType:Gadget path:- scope:exact"}, shapesWithoutCaller(allow, literals),
		"the literal in caller.go counts; the one in caller_test.go does not")
}

func TestParseAllowListReadsShapesAndSkipsComments(t *testing.T) {
	allow, err := ParseAllowList(strings.NewReader(`# header

   nodeType:Notification path:- scope:exact
# another comment
nodeType:* path:*/_Thread scope:children
`))
	require.NoError(t, err)
	assert.Equal(t, 2, allow.Len())
	assert.True(t, allow.Allows("nodeType:Notification path:- scope:exact"))
	assert.True(t, allow.Allows("nodeType:* path:*/_Thread scope:children"))
	assert.False(t, allow.Allows("nodeType:Notification path:- scope:children"))
	var none *AllowList
	assert.False(t, none.Allows("nodeType:Notification path:- scope:exact"))
	assert.Zero(t, none.Len())
}

func TestParseAllowListRefusesLinesThatAreNotShapes(t *testing.T) {
	cases := map[string]string{
		"nodeType:Notification scope:Exact":                            "nodeType:, path: and scope: parts",
		"nodeType:Notification path:- scope:Exact":                     `scope "Exact" is not one of`,
		"nodeType:Notification path:- scope:sideways":                  `scope "sideways"`,
		"path:- nodeType:Notification scope:exact":                     "a shape starts with nodeType:",
		"nodeType:A path:- scope:exact\nnodeType:A path:- scope:exact": "listed twice",
	}
	for text, want := range cases {
		_, err := ParseAllowList(strings.NewReader("# c\n" + text + "\n"))
		var ae *AllowListError
		require.True(t, errors.As(err, &ae), "%q: %v", text, err)
		assert.Contains(t, ae.Reason, want)
		assert.GreaterOrEqual(t, ae.Line, 2)
	}
	// Control: a well-formed line parses.
	_, err := ParseAllowList(strings.NewReader("nodeType:Notification path:- scope:exact\n"))
	assert.NoError(t, err)
}
