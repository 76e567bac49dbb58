package liveindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meshrx/meshrx/mesh"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// filed is one entry of the model: its key and whether the index can file
// it precisely (so a write must visit it exactly when it concerns it).
type filed struct {
	id    int
	key   Key
	entry *Entry[int]
}

// concerns is the rule the index pre-filters for, written out plainly:
// the schema, the node types and the anchor (as mesh.Query.Matches reads it).
func concerns(k Key, w Write) bool {
	if k.AllPartitions {
		if !w.Partition {
			return false
		}
	} else if !slices.Contains(k.Schemas, w.Schema) {
		return false
	}
	if w.Typed && k.Types != nil && !slices.ContainsFunc(k.Types, func(t string) bool {
		return strings.EqualFold(t, w.TypeA) || strings.EqualFold(t, w.TypeB)
	}) {
		return false
	}
	anchor := *k.Query
	anchor.Filter, anchor.Text = nil, nil
	ns, _ := mesh.SplitPath(w.Path)
	return anchor.Matches(mesh.Node{Path: w.Path, Namespace: ns})
}

// precise reports whether the index files k without coarsening it.
func precise(k Key) bool {
	a := anchorsOf(k.Query)
	return a[0].kind != kindAnywhere && len(k.Schemas)*max(len(k.Types), 1)*len(a) <= maxCells
}

var (
	schemas = []string{"p0", "p1", "p2", "p3", "_sys"}
	types   = []string{"Card", "note", "TASK"}
	paths   = []string{"p0", "p0/a", "p0/a/x", "p0/a/B/y", "p1/a/x", "P1/A/X", "p2/c", "p3/a/b/c/d", "_sys/p0/k"}
)

func randomKey(rng *rand.Rand) Key {
	var k Key
	if rng.IntN(8) == 0 {
		k.AllPartitions = true
	} else {
		for range 1 + rng.IntN(2) {
			k.Schemas = append(k.Schemas, schemas[rng.IntN(len(schemas))])
		}
	}
	if rng.IntN(3) > 0 {
		for range 1 + rng.IntN(2) {
			k.Types = append(k.Types, types[rng.IntN(len(types))])
		}
	}
	if rng.IntN(20) == 0 {
		k.Types = []string{} // constrained to no type at all
	}
	var q string
	switch rng.IntN(7) {
	case 0:
		q = "path:" + paths[rng.IntN(len(paths))]
	case 1:
		q = "namespace:" + paths[rng.IntN(len(paths))]
	case 2:
		q = "path:" + paths[rng.IntN(len(paths))] + " scope:descendants"
	case 3:
		q = "path:" + paths[rng.IntN(len(paths))] + " scope:subtree"
	case 4:
		q = fmt.Sprintf("[%s, %s, %s]", paths[rng.IntN(len(paths))], paths[rng.IntN(len(paths))], paths[rng.IntN(len(paths))])
	case 5:
		q = "path:p0/*/x scope:subtree" // a glob: filed anywhere
	default:
		q = "path:" + paths[rng.IntN(len(paths))] + " scope:ancestors"
	}
	parsed, err := mesh.Parse(q)
	if err != nil {
		panic(err)
	}
	k.Query = parsed
	return k
}

func randomWrite(rng *rand.Rand) Write {
	sc := schemas[rng.IntN(len(schemas))]
	w := Write{Schema: sc, Partition: !strings.HasPrefix(sc, "_"), Typed: rng.IntN(6) > 0,
		TypeA: types[rng.IntN(len(types))], Path: paths[rng.IntN(len(paths))]}
	w.TypeB = w.TypeA
	if rng.IntN(4) == 0 {
		w.TypeB = types[rng.IntN(len(types))]
	}
	// A write is folded by its store; the keys above were filed in any case.
	w.TypeA, w.TypeB, w.Path = strings.ToLower(w.TypeA), strings.ToLower(w.TypeB), strings.ToLower(w.Path)
	return w
}

// checkVisits runs random writes through visit and returns the first
// disagreement with the rule: an entry the write concerns that was not
// visited, one visited twice, or a precisely filed one visited needlessly.
func checkVisits(rng *rand.Rand, live []*filed, visit func(Write, func(int)) int) error {
	for range 300 {
		w := randomWrite(rng)
		seen := map[int]int{}
		n := visit(w, func(id int) { seen[id]++ })
		if n != len(seen) {
			return fmt.Errorf("write %+v: Visit says %d, called %d distinct", w, n, len(seen))
		}
		for _, f := range live {
			want := concerns(f.key, w)
			switch {
			case seen[f.id] > 1:
				return fmt.Errorf("write %+v: entry %d (%s) visited %d times", w, f.id, f.key.Query, seen[f.id])
			case want && seen[f.id] == 0:
				return fmt.Errorf("write %+v: entry %d (%+v %s) concerned but not visited", w, f.id, f.key, f.key.Query)
			case !want && seen[f.id] > 0 && precise(f.key):
				return fmt.Errorf("write %+v: entry %d (%+v %s) visited needlessly", w, f.id, f.key, f.key.Query)
			}
		}
	}
	return nil
}

func TestAWriteVisitsExactlyThePreciselyFiledEntriesItConcernsAndEveryOtherOneThatItMay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := New[int]()
	var live []*filed
	for i := range 400 {
		k := randomKey(rng)
		live = append(live, &filed{id: i, key: k, entry: x.Add(k, i)})
	}
	require.NoError(t, checkVisits(rng, live, x.Visit))

	// Remove half, in random order: the rest are still found, the removed never.
	rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for _, f := range live[:200] {
		x.Remove(f.entry)
		x.Remove(f.entry) // twice is harmless
	}
	live = live[200:]
	assert.Equal(t, 200, x.Len())
	require.NoError(t, checkVisits(rng, live, x.Visit))
	all := 0
	x.All(func(int) { all++ })
	assert.Equal(t, 200, all, "All reaches every entry once, those constrained to no type included")

	// Negative control: the same check fails a visitor that forgets the
	// entries filed under any schema.
	broken := func(w Write, f func(int)) int {
		w.Partition = false
		return x.Visit(w, f)
	}
	assert.ErrorContains(t, checkVisits(rng, live, broken), "concerned but not visited")
}

// Removing every entry leaves no cell and no set behind: an index whose
// queries came and went holds nothing.
func TestRemovingEveryEntryLeavesTheIndexEmpty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := New[int]()
	var entries []*Entry[int]
	for i := range 500 {
		entries = append(entries, x.Add(randomKey(rng), i))
	}
	for _, e := range entries {
		x.Remove(e)
	}
	assert.Zero(t, x.Len())
	assert.Empty(t, x.bySchema, "no schema set is left")
	assert.Nil(t, x.anySchema)
	// Control: one entry left keeps its sets.
	x.Add(Key{Schemas: []string{"p0"}, Query: &mesh.Query{Path: "p0/a", Scope: mesh.ScopeChildren}}, 1)
	assert.Len(t, x.bySchema, 1)
}

// A write into one partition of 10,000, each with its own pinned query,
// visits that partition's query alone; a mesh-wide query of the written
// type is visited too, one of another type is not.
func TestAWriteVisitsOnlyItsPartitionsQueriesAmongThousands(t *testing.T) {
	x := New[int]()
	for i := range 10_000 {
		q := &mesh.Query{Path: fmt.Sprintf("v%05d/inbox", i), Scope: mesh.ScopeChildren}
		x.Add(Key{Schemas: []string{fmt.Sprintf("v%05d", i)}, Types: []string{"Notification"}, Query: q}, i)
	}
	x.Add(Key{AllPartitions: true, Types: []string{"notification"}, Query: &mesh.Query{}}, -1)
	x.Add(Key{AllPartitions: true, Types: []string{"Other"}, Query: &mesh.Query{}}, -2)
	var got []int
	n := x.Visit(Write{Schema: "v00042", Partition: true, Typed: true, TypeA: "notification", TypeB: "notification",
		Path: "v00042/inbox/n1"}, func(id int) { got = append(got, id) })
	assert.Equal(t, 2, n)
	assert.ElementsMatch(t, []int{42, -1}, got)
	// Control: an untyped write cannot rule the other type out.
	n = x.Visit(Write{Schema: "v00042", Partition: true, Path: "v00042/inbox/n1"}, func(int) {})
	assert.Equal(t, 3, n)
}

func TestAQueryReadingManySchemasIsFiledInABoundedNumberOfCells(t *testing.T) {
	x := New[int]()
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("p%04d", i))
	}
	q, err := mesh.Parse("[p0001/a, p0002/a, p0003/a] nodeType:A|B|C")
	require.NoError(t, err)
	e := x.Add(Key{Schemas: many, Types: []string{"A", "B", "C"}, Query: q}, 1)
	assert.LessOrEqual(t, len(e.slots), maxCells)
	n := x.Visit(Write{Schema: "p0500", Partition: true, Typed: true, TypeA: "b", TypeB: "b", Path: "p0500/z"}, func(int) {})
	assert.Equal(t, 1, n, "coarsened, it is still found: the store decides")
	x.Remove(e)
	assert.Empty(t, x.bySchema)
	assert.Nil(t, x.anySchema)
	assert.Nil(t, x.coarse)
}

// A query naming more schemas than are filed one by one, a global
// satellite's among them, is visited by a write to that schema, which is
// no partition. Control run: filed with the queries reading every
// partition (before the fix) it was not visited (0 visits, not 1), and a
// store's live access query missed the grant.
func TestAQueryCoarsenedOverManySchemasIsVisitedByAWriteToAGlobalSatelliteItNames(t *testing.T) {
	x := New[int]()
	many := []string{"system_access"}
	for i := range maxCells {
		many = append(many, fmt.Sprintf("p%04d", i))
	}
	e := x.Add(Key{Schemas: many, Query: &mesh.Query{}}, 1)
	x.Add(Key{AllPartitions: true, Query: &mesh.Query{}}, 2)
	var got []int
	x.Visit(Write{Schema: "system_access", Path: "_access/g1"}, func(id int) { got = append(got, id) })
	assert.Equal(t, []int{1}, got, "the coarsened query, not the one reading partitions only")
	got = nil
	x.Visit(Write{Schema: "p0003", Partition: true, Path: "p0003/x"}, func(id int) { got = append(got, id) })
	assert.ElementsMatch(t, []int{1, 2}, got, "a write to a partition visits both")
	all := 0
	x.All(func(int) { all++ })
	assert.Equal(t, 2, all)
	x.Remove(e)
	assert.Nil(t, x.coarse, "removed, it leaves nothing behind")
}
