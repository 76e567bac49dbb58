package mesh

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var knownSchemas = []string{"acme", "admin", "beta", "ops", "rbuergi"}

func newRouter(t *testing.T, cfg RouterConfig) *Router {
	t.Helper()
	r, err := NewRouter(cfg)
	require.NoError(t, err)
	return r
}

func route(t *testing.T, r *Router, query string) (Route, error) {
	t.Helper()
	return r.Route(mustParse(t, query), knownSchemas)
}

func TestAConcreteFirstSegmentPinsTheQueryToItsSchema(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	for _, s := range []string{"path:Acme/Docs", "namespace:acme/Docs nodeType:Article", "path:ACME scope:descendants",
		"[acme/a, Acme/b]", "path:acme/a|acme/b", "path:acme/*/x", "namespace:acme/Docs (nodeType:A OR nodeType:B)"} {
		got, err := route(t, r, s)
		require.NoError(t, err, s)
		assert.Equal(t, Route{Kind: Pinned, Schemas: []string{"acme"}, Anchored: true, Shape: DescribeShape(mustParse(t, s))}, got, s)
	}
	// Control: anchors in two partitions are an anchored fan-out over exactly those.
	got, err := route(t, r, "[acme/a, beta/b]")
	require.NoError(t, err)
	assert.Equal(t, FanOut, got.Kind)
	assert.True(t, got.Anchored)
	assert.Equal(t, []string{"acme", "beta"}, got.Schemas)
}

func TestANamespaceFilterAnchorsOnlyWhenEveryOrBranchHasOne(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	anchored := map[string][]string{
		"namespace:acme|beta/Docs":                                         {"acme", "beta"},
		"namespace:(acme/x OR Acme/y)":                                     {"acme"},
		"(namespace:acme nodeType:A) OR (namespace:beta/x nodeType:B)":     {"acme", "beta"},
		"nodeType:A (namespace:acme/* OR namespace:beta)":                  {"acme", "beta"},
		"namespace:acme/*/_Thread OR namespace:acme/x":                     {"acme"},
		"namespace:rbuergi/_Notification OR namespace:Admin/_Notification": {"admin", "rbuergi"},
	}
	for s, schemas := range anchored {
		got, err := route(t, r, s)
		require.NoError(t, err, s)
		assert.True(t, got.Anchored, s)
		assert.Equal(t, schemas, got.Schemas, s)
	}
	// Controls: one unanchored branch, or a non-literal first segment, leaves
	// the query unanchored, and it is refused.
	for _, s := range []string{
		"(namespace:acme nodeType:A) OR nodeType:B",
		"namespace:*/_Thread OR namespace:acme",
		"namespace:ac*|beta",
		"-namespace:acme",
		"namespace:>acme",
	} {
		_, err := route(t, r, s)
		var ue *UnanchoredQueryError
		assert.True(t, errors.As(err, &ue), "%s: %v", s, err)
	}
}

func TestAGlobalSatelliteRoutesOnlyThroughTheRegistry(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	got, err := route(t, r, "namespace:_Access nodeType:AccessAssignment")
	require.NoError(t, err)
	assert.Equal(t, Pinned, got.Kind)
	assert.Equal(t, []string{"system_access"}, got.Schemas)

	got, err = route(t, r, "path:_Policy nodeType:PartitionAccessPolicy")
	require.NoError(t, err, "an unroutable query is an empty answer, not an error")
	assert.Equal(t, Route{Kind: Unroutable, Anchored: true, Shape: "nodeType:PartitionAccessPolicy path:_Policy scope:exact"}, got)

	got, err = route(t, r, "[_Policy, acme/_Policy]")
	require.NoError(t, err)
	assert.Equal(t, Pinned, got.Kind, "the routable entries of a list still pin")
	assert.Equal(t, []string{"acme"}, got.Schemas)

	// Control: registering _Policy makes the same query pinned.
	withPolicy := newRouter(t, RouterConfig{GlobalSatellites: map[string]string{"_Access": "system_access", "_Policy": "System_Policy"}})
	got, err = route(t, withPolicy, "path:_Policy nodeType:PartitionAccessPolicy")
	require.NoError(t, err)
	assert.Equal(t, Pinned, got.Kind)
	assert.Equal(t, []string{"system_policy"}, got.Schemas)
}

func TestAnUnanchoredQueryIsRefusedUnlessDeclared(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	for _, s := range []string{"nodeType:Notification", "", "path:*", "path:*/Docs scope:children", "path:ac*/x",
		"scope:descendants", "namespace: id:_Policy", "[acme/a, */b]"} {
		got, err := route(t, r, s)
		var ue *UnanchoredQueryError
		require.True(t, errors.As(err, &ue), "%q: %v", s, err)
		assert.Equal(t, DescribeShape(mustParse(t, s)), ue.Shape)
		assert.Equal(t, mustParse(t, s).String(), ue.Query)
		assert.Contains(t, err.Error(), "partitions:all")
		assert.Equal(t, Route{Kind: FanOut, Shape: ue.Shape}, got, "a refused route reads nothing")
	}

	// partitions:all declares the fan-out: every known schema, deduplicated.
	got, err := r.Route(mustParse(t, "nodeType:Notification partitions:all"), []string{"beta", "Acme", "acme", ""})
	require.NoError(t, err)
	assert.Equal(t, Route{Kind: FanOut, Schemas: []string{"acme", "beta"}, Shape: "nodeType:Notification path:- scope:exact"}, got)

	// An allow-listed shape is served without the declaration.
	allow, err := ParseAllowList(strings.NewReader("nodeType:Notification path:- scope:exact\n"))
	require.NoError(t, err)
	graced := newRouter(t, RouterConfig{Allow: allow})
	got, err = route(t, graced, "nodeType:Notification")
	require.NoError(t, err)
	assert.Equal(t, knownSchemas, got.Schemas)
	// Control: the grace is per shape; another shape is still refused.
	_, err = route(t, graced, "nodeType:Notification scope:children")
	assert.Error(t, err)
}

func TestEveryAllowedUnanchoredFanOutLogsOneWarning(t *testing.T) {
	var buf bytes.Buffer
	r := newRouter(t, RouterConfig{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	records := func() []map[string]any {
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
		for sc.Scan() {
			var rec map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
			out = append(out, rec)
		}
		buf.Reset()
		return out
	}
	_, err := route(t, r, "nodeType:Role partitions:all scope:subtree")
	require.NoError(t, err)
	recs := records()
	require.Len(t, recs, 1)
	assert.Equal(t, "WARN", recs[0]["level"])
	assert.Equal(t, "nodeType:Role path:- scope:subtree", recs[0]["shape"])
	assert.EqualValues(t, len(knownSchemas), recs[0]["schemas"])
	assert.Equal(t, "partitions:all", recs[0]["declared"])

	// Controls: pinned, anchored and refused routes log nothing here.
	for _, s := range []string{"path:acme", "namespace:acme|beta", "nodeType:Role"} {
		_, _ = route(t, r, s)
		assert.Empty(t, records(), s)
	}
}

func TestInstanceLocationsNarrowAnUnanchoredSingleTypeFanOut(t *testing.T) {
	r := newRouter(t, RouterConfig{InstanceLocations: map[string][]string{
		"MenuItem": {"namespace:Admin/Menu", "path:Ops/Mail"},
		"Tier":     {"namespace:Admin/Tiers|Beta/Tiers"},
		"Archive":  {"path:Elsewhere"}, // over-stated: costs an empty branch
	}})
	cases := map[string][]string{
		"nodeType:MenuItem partitions:all":                  {"admin", "ops"},
		"nodeType:menuitem name:x partitions:all":           {"admin", "ops"},
		"nodeType:Tier partitions:all":                      {"admin", "beta"},
		"nodeType:Archive partitions:all":                   {},
		"nodeType:Other partitions:all":                     knownSchemas, // undeclared: full fan-out
		"nodeType:MenuItem|Other partitions:all":            knownSchemas, // not a single type
		"(nodeType:MenuItem OR content.x:1) partitions:all": knownSchemas,
	}
	for s, want := range cases {
		got, err := route(t, r, s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got.Schemas, s)
		assert.Equal(t, !slices.Equal(want, knownSchemas), got.Narrowed, s)
	}
	// Control: an anchored query is never widened or narrowed by declarations.
	got, err := route(t, r, "path:acme nodeType:MenuItem")
	require.NoError(t, err)
	assert.Equal(t, []string{"acme"}, got.Schemas)
}

// accessTypes are the security types, spelled out: mesh.SecurityTypes,
// which every router gates whatever its configuration.
var accessTypes = []string{"Role", "GroupMembership", "AccessAssignment", "PartitionAccessPolicy"}

func TestNewRouterRefusesLocationsOnNeverNarrowedTypes(t *testing.T) {
	gated := append(slices.Clone(accessTypes), "Store/Plugin")
	for _, typ := range append(slices.Clone(accessTypes), "role", "Store/Plugin") {
		_, err := NewRouter(RouterConfig{GatedTypes: gated, InstanceLocations: map[string][]string{typ: {"namespace:Admin"}}})
		var le *InstanceLocationError
		require.True(t, errors.As(err, &le), "%s: %v", typ, err)
		assert.Equal(t, typ, le.NodeType)
		assert.Contains(t, le.Reason, "never narrowed")
		assert.Contains(t, le.Reason, "fails open")
	}
	// Control: the same declaration on an ordinary type is accepted.
	_, err := NewRouter(RouterConfig{GatedTypes: gated, InstanceLocations: map[string][]string{"MenuItem": {"namespace:Admin"}}})
	assert.NoError(t, err)
}

func TestNeverNarrowedTypesFailOpenAtQueryTimeToo(t *testing.T) {
	r := newRouter(t, RouterConfig{GatedTypes: append(slices.Clone(accessTypes), "Store/Plugin")})
	// A declaration that slipped past NewRouter must still be inert.
	r.locations["role"] = []string{"admin"}
	r.locations["store/plugin"] = []string{"admin"}
	r.locations["menuitem"] = []string{"admin"}
	for _, s := range []string{"nodeType:Role partitions:all", "nodeType:Store/Plugin partitions:all"} {
		got, err := route(t, r, s)
		require.NoError(t, err)
		assert.Equal(t, knownSchemas, got.Schemas, s)
	}
	assert.True(t, r.NeverNarrowed("ROLE"))
	// Control: the same injected declaration narrows an ordinary type.
	got, err := route(t, r, "nodeType:MenuItem partitions:all")
	require.NoError(t, err)
	assert.Equal(t, []string{"admin"}, got.Schemas)
	assert.False(t, r.NeverNarrowed("MenuItem"))
}

func TestNewRouterRefusesInvalidConfiguration(t *testing.T) {
	cases := []struct {
		name string
		cfg  RouterConfig
		want string
	}{
		{"location does not parse", RouterConfig{InstanceLocations: map[string][]string{"M": {`namespace:"Admin`}}}, "does not parse"},
		{"location names no partition", RouterConfig{InstanceLocations: map[string][]string{"M": {"nodeType:M"}}}, "names no concrete partition"},
		{"location is a glob", RouterConfig{InstanceLocations: map[string][]string{"M": {"namespace:*/_Thread"}}}, "names no concrete partition"},
		{"location is unroutable", RouterConfig{InstanceLocations: map[string][]string{"M": {"path:_Nowhere"}}}, "unregistered global satellite"},
		{"type declared twice", RouterConfig{InstanceLocations: map[string][]string{"M": {"path:a"}, "m": {"path:b"}}}, "declared twice"},
		{"global satellite without _", RouterConfig{GlobalSatellites: map[string]string{"Access": "x"}}, "starting with _"},
		{"global satellite with a slash", RouterConfig{GlobalSatellites: map[string]string{"_A/b": "x"}}, "one first segment"},
		{"global satellite without schema", RouterConfig{GlobalSatellites: map[string]string{"_A": ""}}, "needs a schema"},
		{"empty gated type", RouterConfig{GatedTypes: []string{" "}}, "empty node type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRouter(c.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := NewRouter(cases[0].cfg)
	var pe *ParseError
	assert.True(t, errors.As(err, &pe), "the parse error is wrapped")
	// Control: the zero config is valid.
	_, err = NewRouter(RouterConfig{})
	assert.NoError(t, err)
}

func TestRoutingANilQueryIsAnError(t *testing.T) {
	_, err := newRouter(t, RouterConfig{}).Route(nil, knownSchemas)
	assert.ErrorContains(t, err, "nil")
}

// The security census: every shape the access fold and the notification bell
// issue, plus the shapes they must no longer issue, each with the outcome the
// router must give it. limit:all marks an enumeration that must be complete.
const (
	contentProjection  = "select:path,id,namespace,name,nodeType,content"
	identityProjection = "select:path,id,namespace,name,nodeType"
)

func globalShape(nodeType, projection string) string {
	return "nodeType:" + nodeType + " partitions:all scope:subtree " + projection + " limit:all"
}

func partitionAssignmentsFor(partition, user string) string {
	return "path:" + partition + " scope:descendants nodeType:AccessAssignment content.accessObject:\"" + user + "\" " +
		contentProjection + " limit:all"
}

type censusEntry struct {
	name    string
	query   string
	kind    RouteKind
	schemas []string // for Pinned and allowed FanOut
	refused bool
	fold    bool // issued by the access fold (not a measured shape or the bell)
}

func securityCensus() []censusEntry {
	return []censusEntry{
		{"Roles", globalShape("Role", contentProjection), FanOut, knownSchemas, false, true},
		{"Memberships", globalShape("GroupMembership", contentProjection), FanOut, knownSchemas, false, true},
		{"GatedNodes(Store/Plugin)", globalShape("Store/Plugin", identityProjection), FanOut, knownSchemas, false, true},
		{"RootAssignments", "namespace:_Access nodeType:AccessAssignment " + contentProjection + " limit:all",
			Pinned, []string{"system_access"}, false, true},
		{"RootPolicy", "path:_Policy nodeType:PartitionAccessPolicy " + contentProjection + " limit:all", Unroutable, nil, false, true},
		{"RootPolicy, old spelling", "namespace: id:_Policy nodeType:PartitionAccessPolicy " + contentProjection,
			FanOut, nil, true, false},
		{"PartitionAssignments(acme)", "path:acme scope:descendants nodeType:AccessAssignment " + contentProjection + " limit:all",
			Pinned, []string{"acme"}, false, true},
		{"PartitionPolicies(acme)", "path:acme scope:descendants id:_Policy nodeType:PartitionAccessPolicy " + contentProjection + " limit:all",
			Pinned, []string{"acme"}, false, true},
		{"RootAssignmentsFor(rbuergi)", `namespace:_Access nodeType:AccessAssignment content.accessObject:"rbuergi" ` +
			contentProjection + " limit:all", Pinned, []string{"system_access"}, false, true},
		{"PartitionAssignmentsFor(Admin, rbuergi)", partitionAssignmentsFor("Admin", "rbuergi"), Pinned, []string{"admin"}, false, true},
		{"PartitionAssignmentsFor(rbuergi, rbuergi)", partitionAssignmentsFor("rbuergi", "rbuergi"), Pinned, []string{"rbuergi"}, false, true},
		{"measured: policies, children", "nodeType:PartitionAccessPolicy scope:children", FanOut, nil, true, false},
		{"measured: assignments, children", "nodeType:AccessAssignment scope:children", FanOut, nil, true, false},
		{"measured: assignments, exact", "nodeType:AccessAssignment", FanOut, nil, true, false},
		{"measured: assignments, subtree", "nodeType:AccessAssignment scope:subtree", FanOut, nil, true, false},
		{"bell", "namespace:rbuergi/_Notification nodeType:Notification sort:content.createdAt-desc", Pinned, []string{"rbuergi"}, false, false},
		{"bell, old shape", "nodeType:Notification", FanOut, nil, true, false},
	}
}

func censusQuery(t *testing.T, name string) string {
	t.Helper()
	for _, c := range securityCensus() {
		if c.name == name {
			return c.query
		}
	}
	t.Fatalf("no census entry %q", name)
	return ""
}

// measuredShapes are path-less fan-out shapes the access fold must never issue.
func measuredShapes() []string {
	return []string{
		"nodeType:PartitionAccessPolicy path:- scope:children",
		"nodeType:AccessAssignment path:- scope:children",
		"nodeType:AccessAssignment path:- scope:exact",
		"nodeType:AccessAssignment path:- scope:subtree",
	}
}

func TestTheSecurityCensusClassifiesIntoThreeOutcomes(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	for _, c := range securityCensus() {
		t.Run(c.name, func(t *testing.T) {
			got, err := route(t, r, c.query)
			assert.Equal(t, c.kind, got.Kind)
			if c.refused {
				var ue *UnanchoredQueryError
				require.True(t, errors.As(err, &ue), "refused: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.schemas, got.Schemas)
		})
	}
	// Control: the measured queries really have the measured shapes, so the
	// census covers them and not look-alikes.
	for _, name := range []string{"measured: policies, children", "measured: assignments, children",
		"measured: assignments, exact", "measured: assignments, subtree"} {
		assert.Contains(t, measuredShapes(), DescribeShape(mustParse(t, censusQuery(t, name))), name)
	}
}

func TestTheFoldNeverIssuesAMeasuredFanOutShapeOrAPathLessAnchoredShape(t *testing.T) {
	measured := measuredShapes()
	for _, c := range securityCensus() {
		if !c.fold {
			continue
		}
		q := mustParse(t, c.query)
		shape := DescribeShape(q)
		assert.NotContains(t, measured, shape, c.name)
		if !q.AllPartitions {
			assert.NotContains(t, shape, "path:-", "%s: a non-global fold leg names its path", c.name)
		}
	}
	// Control: the old root policy spelling, which the fold no longer issues,
	// is path-less.
	assert.Contains(t, DescribeShape(mustParse(t, censusQuery(t, "RootPolicy, old spelling"))), "path:-")
}

func TestTheUnanchoredFoldPopulationIsExactlyTheDeclaredGlobalOne(t *testing.T) {
	r := newRouter(t, RouterConfig{})
	var unanchored []string
	for _, c := range securityCensus() {
		if !c.fold {
			continue
		}
		got, err := route(t, r, c.query)
		require.NoError(t, err, c.name)
		if got.Kind == FanOut && !got.Anchored {
			unanchored = append(unanchored, c.name)
		}
	}
	assert.Equal(t, []string{"Roles", "Memberships", "GatedNodes(Store/Plugin)"}, unanchored)
	// Control: without partitions:all a global leg is refused, so the count
	// above depends on the declaration.
	_, err := route(t, r, strings.Replace(globalShape("Role", contentProjection), " partitions:all", "", 1))
	assert.Error(t, err)
}

func TestSchemaForNamesThePartitionOrTheRegisteredGlobalSchema(t *testing.T) {
	r, err := NewRouter(RouterConfig{})
	require.NoError(t, err)
	for path, want := range map[string]string{"Acme/Docs/x": "acme", "_Access/g1": "system_access", "Admin": "admin"} {
		got, ok := r.SchemaFor(path)
		assert.True(t, ok, path)
		assert.Equal(t, want, got, path)
	}
	for _, path := range []string{"", "_Foo/x"} {
		_, ok := r.SchemaFor(path)
		assert.False(t, ok, path)
	}
}

func TestARouterWithoutGatedTypesRefusesToNarrowEverySecurityType(t *testing.T) {
	for _, typ := range SecurityTypes() {
		for _, spelled := range []string{typ, strings.ToLower(typ), strings.ToUpper(typ)} {
			_, err := NewRouter(RouterConfig{InstanceLocations: map[string][]string{spelled: {"path:acme"}}})
			var refused *InstanceLocationError
			require.ErrorAs(t, err, &refused, "a narrowing declaration on %s", spelled)
			assert.Equal(t, spelled, refused.NodeType)
		}
	}
	// Negative control: the same declaration on a type that is not gated
	// is accepted, so the refusal above is about the type.
	_, err := NewRouter(RouterConfig{InstanceLocations: map[string][]string{"Widget": {"path:acme"}}})
	require.NoError(t, err)
}

func TestGlobalSchemaReportsTheSchemasOfRegisteredGlobalSatellitesInAnyASCIICase(t *testing.T) {
	r, err := NewRouter(RouterConfig{GlobalSatellites: map[string]string{"_Access": "system_access", "_Policy": "System_Policy"}})
	require.NoError(t, err)
	for _, s := range []string{"system_access", "SYSTEM_ACCESS", "system_policy"} {
		assert.True(t, r.GlobalSchema(s), s)
	}
	// Controls: a partition's schema, and a global satellite's segment.
	for _, s := range []string{"acme", "_access", "system_acces"} {
		assert.False(t, r.GlobalSchema(s), s)
	}
}
