package sqlgen

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

func TestAPrefixRangeHoldsExactlyTheStringsWithThePrefix(t *testing.T) {
	for _, c := range []struct{ prefix, upper string }{
		{"acme/", "acme0"},
		{"é", "ê"},
		{"a\U0000D7FF", "a\U0000E000"}, // the surrogates are skipped
		{"a\U0010FFFF", "b"},           // the last rune has no successor: the one before moves
	} {
		got, ok := prefixUpperBound(c.prefix)
		require.True(t, ok, c.prefix)
		assert.Equal(t, c.upper, got, "%q", c.prefix)
		assert.True(t, utf8.ValidString(got))
		assert.Less(t, c.prefix, got)
		assert.Less(t, c.prefix+"\U0010FFFF\U0010FFFF", got, "every extension of the prefix is below the bound")
	}
	_, ok := prefixUpperBound("\U0010FFFF")
	assert.False(t, ok, "nothing follows every string starting with U+10FFFF")
}

func TestKeysAreMeshsFoldingOfEachField(t *testing.T) {
	k := KeysOf("Acme/Docs", "Intro", "The \u212Aelvin", "ARTICLE", "")
	assert.Equal(t, Keys{Namespace: "acme/docs", ID: "intro", Path: "acme/docs/intro", Name: "the kelvin",
		NodeType: "article", MainNode: "acme/docs/intro"}, k, "no main node: the node is its own main node")
	assert.Equal(t, "acme", KeysOf("", "ACME", "", "", "").Path)
	assert.Equal(t, "acme/x", KeysOf("acme/x/_Access", "a", "", "", "Acme/X").MainNode)
}

// The keyed branch is what answers for rows with keys: a row whose keys were
// folded some other way (here upper-cased) is not found by them, though
// its fields match. This is the control of the equivalence test's "keys
// folded" run: without keys in play it would pass for the wrong reason.
func TestRowsWithKeysAreMatchedByTheirKeys(t *testing.T) {
	ctx, db := openDB(t)
	createTables(ctx, t, db, "acme", mesh.NodesTable)
	insertRows(ctx, t, db, []row{{schema: "acme", table: mesh.NodesTable, namespace: "acme", id: "a", name: ptr("Alpha"), nodeType: ptr("Item")}})
	q, err := mesh.Parse("name:alpha")
	require.NoError(t, err)
	sel, err := Build(q, mesh.NodesTable, []string{"acme"})
	require.NoError(t, err)
	assert.Contains(t, sel.SQL, "n.name_key = ")
	got, err := query(ctx, db, sel.SQL, sel.Args...)
	require.NoError(t, err)
	assert.Equal(t, []string{"acme/a"}, paths(got), "control: keys as KeysOf folds them")

	_, err = db.Exec(ctx, `UPDATE acme.mesh_nodes SET name_key = upper(name_key)`)
	require.NoError(t, err)
	got, err = query(ctx, db, sel.SQL, sel.Args...)
	require.NoError(t, err)
	assert.Empty(t, got, "keys folded otherwise: the keyed branch does not find the row")

	_, err = db.Exec(ctx, `UPDATE acme.mesh_nodes SET `+strings.ReplaceAll(KeyColumns, ",", " = NULL,")+` = NULL`)
	require.NoError(t, err)
	got, err = query(ctx, db, sel.SQL, sel.Args...)
	require.NoError(t, err)
	assert.Equal(t, []string{"acme/a"}, paths(got), "without keys the spelled-out branch finds it")
}
