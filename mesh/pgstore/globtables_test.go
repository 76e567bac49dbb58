package pgstore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/mesh"
)

// A glob in an anchor can reach a satellite container it does not spell
// ("acme/*" matches acme/Docs/_Access/g, as its * runs over '/'), so the read
// must take the tables below it too. Each answer is compared with the
// nodes q.Matches selects. Control: with tablesFor routing a glob anchor by
// its spelling (the code before the fix) the satellites are missing from
// the first five answers (run: all five failed).
func TestAGlobAnchorReadsTheSatellitesItsGlobReaches(t *testing.T) {
	t.Parallel()
	s := openStore(t, pg.Database(t), Options{})
	all := []mesh.Node{
		{Path: "acme/Docs", NodeType: "Folder"},
		{Path: "acme/Docs/a", NodeType: "Article"},
		{Path: "acme/Docs/_Notification/n1", NodeType: "Notification"},
		{Path: "acme/Docs/_Thread/t1", NodeType: "Thread"},
	}
	for _, n := range all {
		put(t, s, n)
	}
	for _, query := range []string{
		"path:acme/*",
		"path:acme/Docs/* scope:exact",
		"path:acme/Doc* scope:children",
		"path:acme/Docs/_N* scope:children",
		"path:acme/*/n1",
		"path:acme/Docs/_Thread/* scope:subtree",
	} {
		q := mustParse(t, query)
		var want []string
		for _, n := range all {
			if q.Matches(n) {
				want = append(want, n.Path)
			}
		}
		got := initialOf(t, s, query)
		assert.ElementsMatch(t, want, pathsOf(got.Items), "query %s", query)
	}
}
