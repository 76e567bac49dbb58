package mesh

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPathIsTheNamespaceAndIDJoinedBySlashOrTheIDAtTheRoot(t *testing.T) {
	cases := []struct{ ns, id, path string }{
		{"", "acme", "acme"},
		{"acme", "Docs", "acme/Docs"},
		{"acme/Docs/_Access", "g1", "acme/Docs/_Access/g1"},
	}
	for _, c := range cases {
		assert.Equal(t, c.path, JoinPath(c.ns, c.id))
		ns, id := SplitPath(c.path)
		assert.Equal(t, c.ns, ns, "namespace of %q", c.path)
		assert.Equal(t, c.id, id, "id of %q", c.path)
	}
}

func TestThePartitionIsTheFirstSegmentAndItsSchemaIsLowerCased(t *testing.T) {
	assert.Equal(t, "Acme", Partition("Acme/Docs/a"))
	assert.Equal(t, "Acme", Partition("Acme"))
	assert.Equal(t, "acme", SchemaOf("Acme/Docs/a"))
	// Control: the partition keeps its spelling; only the schema folds case.
	assert.NotEqual(t, Partition("Acme/x"), SchemaOf("Acme/x"))
}

func TestValidatePathRefusesWhatCannotNameANode(t *testing.T) {
	long := strings.Repeat(strings.Repeat("x", 19)+"/", 60) // 1200 bytes in 20-byte segments
	cases := []struct {
		name, bad, good, reason string
	}{
		{"empty", "", "a", "empty"},
		{"leading slash", "/acme/x", "acme/x", "starts with a slash"},
		{"trailing slash", "acme/x/", "acme/x", "ends with a slash"},
		{"empty segment", "acme//x", "acme/x", "empty segment at byte 5"},
		{"dot segment", "acme/./x", "acme/x", `segment "." at byte 5`},
		{"dot-dot segment", "acme/../x", "acme/x", `segment ".."`},
		{"control character", "acme/x\x01y", "acme/xy", "control character U+0001 at byte 6"},
		{"invalid UTF-8", "acme/\xffx", "acme/x", "not valid UTF-8"},
		{"over-long path", long[:MaxPathLen+1], long[:MaxPathLen-1], "the limit is 1024"},
		{"over-long segment", "a/" + strings.Repeat("s", MaxSegmentLen+1), "a/" + strings.Repeat("s", MaxSegmentLen), "the limit is 255"},
		{"too deep", strings.Repeat("a/", MaxPathDepth) + "a", strings.Repeat("a/", MaxPathDepth-1) + "a", "the limit is 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidatePath(c.bad)
			var pe *PathError
			require.True(t, errors.As(err, &pe), "want a *PathError for %q, got %v", c.bad, err)
			assert.Equal(t, c.bad, pe.Path, "the error keeps the whole path")
			assert.Contains(t, pe.Reason, c.reason)
			// Negative control: the same path without the fault is valid.
			assert.NoError(t, ValidatePath(c.good))
		})
	}
}

func TestAPathErrorMessageQuotesAShortenedPath(t *testing.T) {
	huge := strings.Repeat("x", 5000)
	err := ValidatePath(huge)
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200, "a huge path must not flood the message")
	assert.Contains(t, err.Error(), "5000 bytes")
}

func TestASatelliteIsStoredInTheTableOfItsFirstSatelliteSegment(t *testing.T) {
	cases := map[string]string{
		"acme/Docs":                          NodesTable,
		"acme/Docs/_Access/g1":               "access",
		"acme/_Notification/n1":              "notifications",
		"acme/_Thread/t1":                    "threads",
		"acme/_ThreadMessage/m1":             "threads",
		"acme/x/_Activity/a1":                "activities",
		"acme/_Thread/t1/_Access/g":          "threads", // cut at the first satellite segment
		"_Access/g1":                         "access",  // a global satellite's primary table
		"acme/Docs/_Policy":                  NodesTable,
		"_Policy":                            NodesTable,
		"acme/_Unknown/x":                    NodesTable,
		"acme/Docs/_access/g1":               "access",
		"acme/Docs/_Notification/n1/_Thread": "notifications",
	}
	for path, table := range cases {
		assert.Equal(t, table, TableFor(path), "table of %q", path)
	}
}

func TestTheOwnerOfASatelliteIsThePathBeforeItsFirstSatelliteSegment(t *testing.T) {
	cases := map[string]string{
		"acme/Docs/_Access/g1":      "acme/Docs",
		"rbuergi/_Notification/n1":  "rbuergi",
		"acme/_Thread/t1/_Access/g": "acme",
		"acme/Docs":                 "acme/Docs", // not a satellite: owns itself
		"acme/Docs/_Policy":         "acme/Docs/_Policy",
		"_Access/g1":                "", // a global satellite is owned by the root
	}
	for path, owner := range cases {
		assert.Equal(t, owner, OwnerOf(path), "owner of %q", path)
	}
}

func TestSatelliteTablesListsEveryTableTheSatelliteMapUses(t *testing.T) {
	tables := SatelliteTables()
	for _, seg := range []string{"_Access", "_Notification", "_Thread", "_ThreadMessage", "_Activity"} {
		table, ok := satelliteTable(seg)
		require.True(t, ok, seg)
		assert.Contains(t, tables, table)
	}
	_, ok := satelliteTable("_Policy")
	assert.False(t, ok, "_Policy is not a satellite")
	tables[0] = "mutated"
	assert.NotContains(t, SatelliteTables(), "mutated", "the list is a fresh value each call")
}

func TestDefaultGlobalSatellitesIsAFreshMapEachCall(t *testing.T) {
	m := DefaultGlobalSatellites()
	assert.Equal(t, map[string]string{"_Access": "system_access"}, m)
	m["_Policy"] = "x"
	assert.NotContains(t, DefaultGlobalSatellites(), "_Policy")
}
