package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/rx"
)

// packageWriteMeeting holds each write of a package node until two have
// arrived (or a bound passes), so that two first publications both read
// "no package" before either writes: the interleaving that lost tiers.
type packageWriteMeeting struct {
	mesh.Store
	at *meeting
}

type meeting struct {
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func newMeeting() *meeting { return &meeting{open: make(chan struct{})} }

func (m *meeting) arrive() {
	m.mu.Lock()
	m.waiting++
	if m.waiting == 2 {
		close(m.open)
	}
	open := m.open
	m.mu.Unlock()
	select {
	case <-open:
	case <-time.After(testkit.Bound):
		// Bounded: a publication that never writes does not hold the other
		// for ever. Not shorter: on a loaded machine the second publication
		// may reach its write seconds after the first (it was 2s), and a
		// meeting that falls open does not make the two writes meet, so
		// the negative control below would pass or fail by the machine's
		// speed.
	}
}

func (s packageWriteMeeting) Put(ctx context.Context, n mesh.Node) (mesh.Node, error) {
	if n.NodeType == PackageNodeType {
		s.at.arrive()
	}
	return s.Store.Put(ctx, n)
}

func (s packageWriteMeeting) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if n.NodeType == PackageNodeType {
		s.at.arrive()
	}
	return s.Store.PutIfVersion(ctx, n, expected)
}

// unconditionalPackageWrites is the negative control: the create-only
// write of a package node made last-writer-wins, as it was.
type unconditionalPackageWrites struct{ mesh.Store }

func (s unconditionalPackageWrites) PutIfVersion(ctx context.Context, n mesh.Node, expected int64) (mesh.Node, error) {
	if n.NodeType == PackageNodeType {
		return s.Store.Put(ctx, n)
	}
	return s.Store.PutIfVersion(ctx, n, expected)
}

// racePublish publishes plugin at tier=pro on a and its upper-case
// spelling without a tier on b, at once, with the same bytes, and returns
// the problems it finds: a 2xx answer whose tier is not the package's, or
// other than one package node.
func racePublish(t *testing.T, a, b *fixture, store mesh.Store, plugin string) []string {
	t.Helper()
	archive := testkit.ModuleArchive(t, plugin, "1.0.0", 1)
	ra := a.send(publishRequest(plugin, "?version=1.0.0&tier=pro", testPublishToken, archive))
	rb := b.send(publishRequest(strings.ToUpper(plugin), "?version=1.0.0", testPublishToken, archive))
	var problems []string
	var answers []PublishAnswer
	for _, ch := range []<-chan reply{ra, rb} {
		var got reply
		select {
		case got = <-ch:
		case <-time.After(testkit.Bound):
			require.FailNow(t, "bounded wait tripped", "a publication of %s was not answered within %s", plugin, testkit.Bound)
		}
		require.NoError(t, got.err)
		if got.status != http.StatusCreated && got.status != http.StatusOK {
			problems = append(problems, fmt.Sprintf("%s: answered %d %s", plugin, got.status, got.body))
			continue
		}
		answers = append(answers, decodePublish(t, got))
	}
	// The check's own read may meet a busy machine: it is retried a
	// bounded number of times.
	var ch mesh.Change
	var err error
	for range 10 {
		ch, err = rx.First(t.Context(), rx.Filter(store.Query("namespace:"+DefaultSource+" nodeType:"+PackageNodeType), func(c mesh.Change) bool { return c.Kind == mesh.Initial }))
		if err == nil {
			break
		}
	}
	require.NoError(t, err)
	var nodes []mesh.Node
	for _, n := range ch.Items {
		if mesh.EqualNames(n.ID, plugin) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) != 1 {
		return append(problems, fmt.Sprintf("%s: %d package nodes", plugin, len(nodes)))
	}
	p, err := decodePackage(nodes[0])
	require.NoError(t, err)
	for _, ans := range answers {
		if ans.Tier != p.tier {
			problems = append(problems, fmt.Sprintf("%s: answered tier %q, the package is at %q", plugin, ans.Tier, p.tier))
		}
		if ans.Module != p.name {
			problems = append(problems, fmt.Sprintf("%s: landed as %q, the package is spelled %q", plugin, ans.Module, p.name))
		}
	}
	return problems
}

// TestConcurrentFirstPublicationsOfOnePackageDecideItsTierAndSpellingOnce
// publishes one package twice at once (tier=pro and no tier, in two
// spellings) over many rounds, on the embedded store and on two PostgreSQL
// replicas sharing a volume. Every answer must state the tier the package
// is served at, and there must be one package node. Negative control: with
// the create-only write made last-writer-wins and the two writes made to
// meet, the same publications leave an answer that lies about the tier.
func TestConcurrentFirstPublicationsOfOnePackageDecideItsTierAndSpellingOnce(t *testing.T) {
	const rounds = 15
	t.Run("memstore", func(t *testing.T) {
		f := newFixture(t, fixtureOptions{})
		var problems []string
		for i := range rounds {
			problems = append(problems, racePublish(t, f, f, f.store, fmt.Sprintf("Race.Mem%02d", i))...)
		}
		assert.Empty(t, problems)

		met := newFixture(t, fixtureOptions{server: func(o *ServerOptions) { o.Mesh = packageWriteMeeting{Store: o.Mesh, at: newMeeting()} }})
		assert.Empty(t, racePublish(t, met, met, met.store, "Race.Met"), "with the two writes made to meet")

		t.Run("negative control: last writer wins", func(t *testing.T) {
			f := newFixture(t, fixtureOptions{server: func(o *ServerOptions) {
				o.Mesh = unconditionalPackageWrites{packageWriteMeeting{Store: o.Mesh, at: newMeeting()}}
			}})
			assert.NotEmpty(t, racePublish(t, f, f, f.store, "Race.Lww"), "an unconditional write lets one answer lie")
		})
	})
	t.Run("pgstore", func(t *testing.T) {
		srv := stoppablePG(t)
		dbURL, err := srv.CreateDatabase(t.Context(), "registry-first-publish")
		require.NoError(t, err)
		root := t.TempDir()
		a := pgReplica(t, dbURL, root)
		b := pgReplica(t, dbURL, root)
		var problems []string
		for i := range rounds {
			problems = append(problems, racePublish(t, a, b, a.store, fmt.Sprintf("Race.Pg%02d", i))...)
		}
		assert.Empty(t, problems)

		// The two replicas' writes made to meet: the database decides.
		at := newMeeting()
		ma := newFixture(t, fixtureOptions{store: a.store, root: root, server: func(o *ServerOptions) { o.Mesh = packageWriteMeeting{Store: o.Mesh, at: at} }})
		mb := newFixture(t, fixtureOptions{store: b.store, root: root, server: func(o *ServerOptions) { o.Mesh = packageWriteMeeting{Store: o.Mesh, at: at} }})
		assert.Empty(t, racePublish(t, ma, mb, a.store, "Race.PgMet"))
	})
}

// TestAPublicationsReadsDoNotGrowWithTheNumberOfPackages publishes a new
// package, then a new version of it, beside 10 and beside 3,000 other
// packages, and counts the mesh reads each publication makes: point reads
// only, the same number whatever the catalog's size, and never a read of
// the package list. Negative control: before publications created their
// package node create-only, each one read every package node (one package
// query of the whole namespace, sorted): catalogQueries would be 1 per
// publication and the nodes read would grow with the catalog.
func TestAPublicationsReadsDoNotGrowWithTheNumberOfPackages(t *testing.T) {
	reads := func(t *testing.T, packages int) (gets, queries, packageQueries int64) {
		f := newFixture(t, fixtureOptions{})
		for i := range packages - 1 {
			_, err := f.store.Put(t.Context(), mesh.Node{Path: packageNodePath(DefaultSource, fmt.Sprintf("Other.P%05d", i)), NodeType: PackageNodeType, Name: fmt.Sprintf("Other.P%05d", i), Content: []byte(`{"tier":""}`)})
			require.NoError(t, err)
		}
		f.putPackage(mesh.Node{Path: packageNodePath(DefaultSource, "Other.Last"), NodeType: PackageNodeType, Name: "Other.Last"})
		require.Eventually(t, func() bool {
			st, ok := f.server.catalog.current()
			return ok && st.packages.len() == packages
		}, testkit.Bound, time.Millisecond, "the catalog holds every package before the publications")
		g0, q0 := f.mesh.reads()
		c0 := f.mesh.catalogQueries.Load()
		for _, v := range []string{"1.0.0", "1.1.0"} {
			got := f.do(publishRequest("Flat.Pkg", "?version="+v, testPublishToken, testkit.ModuleArchive(t, "Flat.Pkg", v, 1)))
			require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
		}
		g1, q1 := f.mesh.reads()
		return g1 - g0, q1 - q0, f.mesh.catalogQueries.Load() - c0
	}
	smallGets, smallQueries, smallPackageQueries := reads(t, 10)
	bigGets, bigQueries, bigPackageQueries := reads(t, 3000)
	assert.Zero(t, smallPackageQueries, "a publication reads no package list")
	assert.Zero(t, bigPackageQueries, "a publication reads no package list")
	assert.Equal(t, smallGets, bigGets, "point reads per publication do not depend on the number of packages")
	assert.Equal(t, smallQueries, bigQueries, "queries per publication do not depend on the number of packages")
	assert.LessOrEqual(t, smallGets, int64(4), "two publications: a point read each, and the create")
}
