package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/mesh"
	"github.com/meshrx/meshrx/mesh/pgstore"
	"github.com/meshrx/meshrx/mesh/pgstore/pgtest"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/registry/landing"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// pgBound is how long a test on PostgreSQL waits for the store to notice
// the server has stopped, or for a publication to be answered while it is:
// the stopping store's budgets are cut to stoppingOperation below, so this
// is a ceiling, not a delay.
const pgBound = 3 * stoppingOperation

// stoppingOperation is the operation budget of a store whose server a test
// stops: short, so that the stop is answered in seconds, but its reads'
// bound (QueryInitial, 1.75s at 12s) not so short that a loaded machine
// trips it while the server is up (at 4s it was 500ms: a re-read of the
// catalog's live query over that failed the catalog, whose retry the
// virtual clock never reaches).
const stoppingOperation = 12 * time.Second

// stoppablePG starts a PostgreSQL server of the test's own, which the test
// may stop: a shared one cannot be. It skips (or fails, with
// MESHRX_REQUIRE_PG=1) where there is none to start.
func stoppablePG(t *testing.T) *pgtest.Server {
	t.Helper()
	bins, err := pgtest.FindBinaries(os.Getenv("PATH"), pgtest.DebianRoot)
	plan := pgtest.Decide(os.Getenv, bins, err)
	switch plan.Mode {
	case pgtest.ModeSkip:
		t.Skip(plan.Reason)
	case pgtest.ModeFail:
		t.Fatal(plan.Reason)
	case pgtest.ModeExternal:
		if os.Getenv("MESHRX_REQUIRE_PG") == "1" && plan.Binaries == (pgtest.Binaries{}) {
			t.Fatal("this test stops its PostgreSQL server: it needs the server programs, not only MESHRX_PG_URL")
		}
	}
	srv, err := pgtest.Config{Binaries: bins}.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, srv.Stop()) })
	return srv
}

// openPG opens a pgstore replica on dbURL with the default budgets (what a
// user gets): for the tests whose database stays up, where no budget is
// the subject. With budgets cut to seconds, a re-read of the feed's live
// query on a loaded machine (its Initial bound was 500ms) could trip,
// fail the feed and leave it down until its retry, which the virtual
// clock never reaches: a failure seen once under -race.
func openPG(t *testing.T, dbURL string) *pgstore.Store {
	t.Helper()
	return openPGWithin(t, dbURL, mesh.DefaultBudgets())
}

// openStoppingPG opens a pgstore replica on dbURL whose waits are cut to
// seconds (stoppingOperation), so that a stopped server is noticed quickly.
func openStoppingPG(t *testing.T, dbURL string) *pgstore.Store {
	t.Helper()
	return openPGWithin(t, dbURL, mesh.BudgetsFrom(stoppingOperation))
}

// openPGWithin opens a pgstore replica on dbURL with budgets.
//
// Opening is retried while it is unavailable, as a service's start-up would
// be: short budgets bound connecting the listener to a fraction of a
// second, which a loaded machine can exceed (a failure seen with the suite
// run beside two CPU-burning loops), and that is not what these tests are
// about.
func openPGWithin(t *testing.T, dbURL string, budgets mesh.Budgets) *pgstore.Store {
	t.Helper()
	var s *pgstore.Store
	var err error
	for attempt := 1; ; attempt++ {
		s, err = pgstore.Open(t.Context(), dbURL, pgstore.Options{Budgets: budgets, Logger: quietLogger()})
		if err == nil || !mesh.IsUnavailable(err) || attempt == 5 {
			break
		}
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// pgReplica is a registry replica on dbURL and the volume at root, its
// store's budgets the defaults.
func pgReplica(t *testing.T, dbURL, root string) *fixture {
	return pgReplicaOn(t, openPG(t, dbURL), root)
}

// stoppingPGReplica is a registry replica on dbURL, whose server the test
// stops, and the volume at root.
func stoppingPGReplica(t *testing.T, dbURL, root string) *fixture {
	return pgReplicaOn(t, openStoppingPG(t, dbURL), root)
}

func pgReplicaOn(t *testing.T, store *pgstore.Store, root string) *fixture {
	return newFixture(t, fixtureOptions{store: store, root: root, server: func(o *ServerOptions) { o.Feed = store.FeedDown() }})
}

func TestOnPostgreSQLAPublishWithTheDatabaseStoppedMidPublishLeavesNothingServed(t *testing.T) {
	srv := stoppablePG(t)
	dbURL, err := srv.CreateDatabase(t.Context(), "registry-publish-stop")
	require.NoError(t, err)
	root := t.TempDir()
	// Two replicas on one database and one volume.
	a := stoppingPGReplica(t, dbURL, root)
	b := stoppingPGReplica(t, dbURL, root)
	freeB := b.instance("free-b", "free", "Plugins/*")

	// Control first: with the database up, a publication on one replica is
	// served by the other at its tier.
	got := a.do(publishRequest("Acme.Base", "?version=1.0.0", testPublishToken, testkit.ModuleArchive(t, "Acme.Base", "1.0.0", 1)))
	require.Equal(t, http.StatusCreated, got.status, "%s", got.body)
	require.Eventually(t, func() bool {
		st, ok := b.server.catalog.current()
		return ok && !st.lookup("Acme.Base").unreadable
	}, pgBound, 10*time.Millisecond, "replica b's catalog hears of Acme.Base")
	b.clk.Advance(b.served.Freshness())
	b.index(freeB)
	b.settle()
	idx, _ := b.index(freeB)
	require.Equal(t, map[string]string{"Acme.Base": "1.0.0"}, listed(idx))

	// A pro publication whose database stops while its upload is arriving.
	archive := testkit.ModuleArchive(t, "Acme.Pro", "1.0.0", 1)
	body, upload := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.http.URL+client.BundlesPath+"/Acme.Pro?version=1.0.0&tier=pro", body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testPublishToken)
	req.ContentLength = int64(len(archive))
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := a.http.Client().Do(req)
		if err != nil {
			answered <- nil
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		answered <- resp
	}()
	half := len(archive) / 2
	_, err = upload.Write(archive[:half])
	require.NoError(t, err)
	require.NoError(t, srv.Stop(), "the database stops mid-publish")
	_, err = io.Copy(upload, bytes.NewReader(archive[half:]))
	require.NoError(t, err)
	require.NoError(t, upload.Close())
	var resp *http.Response
	select {
	case resp = <-answered:
	case <-time.After(pgBound):
		require.FailNow(t, "the publication was not answered")
	}
	require.NotNil(t, resp)
	assert.GreaterOrEqual(t, resp.StatusCode, 500, "a publication that could not make its tier durable is not a success")

	// Nothing of it is on the volume: no replica can serve it.
	assert.Equal(t, map[string]string{"Acme.Base": "1.0.0"}, a.activation())
	assert.Empty(t, testkit.Generations(t, root, "Acme.Pro"))

	// Both catalogs know they are incomplete (what /readyz reports).
	for name, f := range map[string]*fixture{"a": a, "b": b} {
		require.Eventually(t, func() bool { ok, _ := f.server.catalog.Complete(); return !ok }, pgBound, 10*time.Millisecond,
			"replica %s's catalog notices the database stopped", name)
	}

	// A third replica, whose database the others cannot reach, lands Acme.Pro
	// meanwhile: replica b serves its bytes (the volume is shared) but does
	// not know its tier, so it is in no index b assembles and b refuses its
	// download from the catalog. (Keyed requests themselves answer 503 while
	// the database is down: authentication cannot read; what is checked here
	// is what they are answered from.)
	third := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "third"})
	_, err = third.Land(t.Context(), "Acme.Pro", "1.0.0", archive)
	require.NoError(t, err)
	b.clk.Advance(b.served.Freshness())
	act, err := b.landing.Activation(t.Context())
	require.NoError(t, err)
	require.Contains(t, servedVersions(act), "Acme.Pro")
	st, ok := b.server.catalog.current()
	require.True(t, ok)
	everyone := func(string, string) bool { return true }
	var doc client.Index
	require.NoError(t, json.Unmarshal(assembleIndex(act, st, "", everyone), &doc))
	assert.Equal(t, map[string]string{"Acme.Base": "1.0.0"}, listed(doc), "a package whose tier is not known is in no index, even for a caller entitled to everything")
	assert.True(t, st.lookup("acme.pro").unreadable, "and its download is refused before the volume")
	assert.False(t, st.lookup("Acme.Base").unreadable, "control: the package whose tier b knows is served")
}

// TestOnPostgreSQLALandingOnOneReplicaIsAbsorbedByTheOtherThroughTheFeed:
// two replicas on one database and one volume, at a size CI affords.
// Replica b hears of a's landing through the change nodes on PostgreSQL
// (LISTEN/NOTIFY) and re-reads only that module: no derivation, no
// freshness wait. Negative control: a replica with the feed disabled does
// not serve the landing until its snapshot is due.
func TestOnPostgreSQLALandingOnOneReplicaIsAbsorbedByTheOtherThroughTheFeed(t *testing.T) {
	srv := stoppablePG(t)
	dbURL, err := srv.CreateDatabase(t.Context(), "registry-feed")
	require.NoError(t, err)
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	lc := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "c"})
	const modules = 200
	for i := range modules {
		land(t, la, fmt.Sprintf("Ci.Module%03d", i), "1.0.0")
	}
	clk := rxtest.NewClock()
	a := newFeedServed(t, la, clk, openPG(t, dbURL))
	b := newFeedServed(t, lb, clk, openPG(t, dbURL))
	c := newServed(t, lc, clk) // the control: no feed
	for _, s := range []*ServedActivation{a, b, c} {
		require.Equal(t, modules, read(t, s).mods.Len())
	}
	feedLive(t, b)

	land(t, a, "Ci.Module042", "2.0.0")
	land(t, a, "Ci.Fresh", "1.0.0")
	require.Eventually(t, func() bool { return b.Absorbed() >= 2 }, pgBound, 5*time.Millisecond, "b absorbing a's landings through PostgreSQL")
	got := servedVersions(read(t, b).Activation())
	assert.Equal(t, "2.0.0", got["Ci.Module042"])
	assert.Equal(t, "1.0.0", got["Ci.Fresh"])
	assert.EqualValues(t, 1, b.Derivations(), "absorbed by reading the two modules, not by a derivation")

	gotC := servedVersions(read(t, c).Activation())
	assert.Equal(t, "1.0.0", gotC["Ci.Module042"], "without the feed: not until the snapshot is due")
	assert.NotContains(t, gotC, "Ci.Fresh")
	clk.Advance(c.Freshness())
	read(t, c)
	settle(t, c)
	assert.Equal(t, "2.0.0", servedVersions(read(t, c).Activation())["Ci.Module042"], "reconciliation alone, at Freshness")
}

// TestOnPostgreSQLEveryCommittedRecordIsServedByTheOtherReplicaWithinFreshness:
// two replicas on one database and one volume. A landing whose
// announcement the database refuses, and one whose writer died before
// announcing it, are served by replica b one journal period later; a
// re-publish of the dead writer's version through b (answered "already
// published") is announced, and replica c, which tails no journal, hears of
// it on the feed at once. Negative control: c does not serve the
// unannounced landing a journal period later.
func TestOnPostgreSQLEveryCommittedRecordIsServedByTheOtherReplicaWithinFreshness(t *testing.T) {
	srv := stoppablePG(t)
	dbURL, err := srv.CreateDatabase(t.Context(), "registry-journal")
	require.NoError(t, err)
	root := t.TempDir()
	la := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "a"})
	lb := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "b"})
	lc := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "c"})
	dead := newLanding(t, landing.DirVolume(root), landing.Options{Replica: "dead"})
	land(t, la, "Ci.Seed", "1.0.0")
	clk := rxtest.NewClock()
	silent := &silentChanges{Store: openPG(t, dbURL)}
	silent.silent.Store(true)
	a := newJournalServed(t, la, clk, silent)
	b := newJournalServed(t, lb, clk, openPG(t, dbURL))
	c := newFeedServed(t, lc, clk, openPG(t, dbURL))
	for _, s := range []*ServedActivation{a, b, c} {
		read(t, s)
	}
	feedLive(t, b)
	feedLive(t, c)
	tailedNow(t, b, clk)

	land(t, a, "Ci.Unannounced", "1.0.0")
	orphan := testkit.ModuleArchive(t, "Ci.Orphan", "1.0.0", 1)
	_, err = dead.Land(t.Context(), "Ci.Orphan", "1.0.0", orphan)
	require.NoError(t, err)
	clk.Advance(b.journalPeriod)
	tailedNow(t, b, clk)
	got := servedVersions(read(t, b).Activation())
	assert.Equal(t, "1.0.0", got["Ci.Unannounced"], "served one journal period later")
	assert.Equal(t, "1.0.0", got["Ci.Orphan"])
	assert.NotContains(t, servedVersions(read(t, c).Activation()), "Ci.Unannounced", "control: no journal tail, no announcement")

	_, created, err := b.LandArchive(t.Context(), "Ci.Orphan", "1.0.0", bytes.NewReader(orphan), int64(len(orphan)))
	require.NoError(t, err)
	require.False(t, created)
	require.Eventually(t, func() bool { return servedVersions(read(t, c).Activation())["Ci.Orphan"] == "1.0.0" },
		pgBound, 5*time.Millisecond, "c hearing b's announcement of the re-publish through PostgreSQL")
}
