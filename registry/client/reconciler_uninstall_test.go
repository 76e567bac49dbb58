package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// drop stops listing plugin in the index, as a removal or a tier change
// that hides it does; its bundle stays.
func (f *fakeRegistry) drop(plugin string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.index.Bundles[:0]
	for _, e := range f.index.Bundles {
		if e.Plugin != plugin {
			kept = append(kept, e)
		}
	}
	f.index.Bundles = kept
}

// uninstalls records the calls to a test Uninstall; fail makes the next
// calls fail.
type uninstalls struct {
	mu    sync.Mutex
	calls []string // plugin@version
	fail  error
}

func (u *uninstalls) uninstall(_ context.Context, plugin, version string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls = append(u.calls, plugin+"@"+version)
	return u.fail
}

func (u *uninstalls) took() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.calls...)
}

func (u *uninstalls) setFail(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.fail = err
}

// Negative control: before the Reconciler uninstalled anything (main at
// 66bbd3a, which has no Uninstall), B stays applied for ever and the
// "B is uninstalled" assertion fails; with UninstallAfter ignored (the
// uninstall made on the first index that leaves B out) the "not before
// UninstallAfter" assertion fails.
func TestAPluginTheIndexStopsListingIsUninstalledOnceMissingForUninstallAfterAndNothingElseIs(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.etags = true // polls after the drop are 304s: the time must run on through them
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	reg.publish("Acme.B", "2.0.0", testkit.RandomBytes(1<<10), "")
	un := &uninstalls{}
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.Uninstall = un.uninstall
		r.UninstallAfter = 3 * pollEvery
	})
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "one of two applied")
	testkit.Receive(t, u.applied, "two of two applied")

	reg.drop("Acme.B")
	for i := 1; i <= 3; i++ {
		st := u.next(t)
		require.True(t, st.Healthy, st.LastError)
		assert.Empty(t, un.took(), "not before UninstallAfter (poll %d after the drop)", i)
		assert.Equal(t, map[string]string{"Acme.A": "1.0.0", "Acme.B": "2.0.0"}, st.Applied)
		assert.Equal(t, map[string]string{"Acme.B": "2.0.0"}, st.Dropped)
	}
	st := u.next(t) // B has been missing for 3 polls' worth of time
	require.True(t, st.Healthy, st.LastError)
	assert.Equal(t, []string{"Acme.B@2.0.0"}, un.took(), "B is uninstalled, and only B")
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, st.Applied)
	assert.Empty(t, st.Dropped)
	warns := u.logs.Matching(slog.LevelWarn, "uninstalled a plugin its index no longer lists")
	require.Len(t, warns, 1)
	assert.Equal(t, "Acme.B", warns[0].Attrs["plugin"].String())
	assert.Equal(t, 3*pollEvery, warns[0].Attrs["missingFor"].Duration())

	require.True(t, u.next(t).Healthy)
	assert.Len(t, un.took(), 1, "uninstalled once")

	// Listed again, B is applied again like any new plugin.
	reg.publish("Acme.B", "2.0.0", testkit.RandomBytes(1<<10), "")
	st = u.next(t)
	require.True(t, st.Healthy, st.LastError)
	assert.Equal(t, "Acme.B", testkit.Receive(t, u.applied, "B applied again").entry.Plugin)
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0", "Acme.B": "2.0.0"}, st.Applied)
}

// A registry replica that does not yet know a package's tier serves it to
// nobody for a while (fail closed): a plugin missing for less than
// UninstallAfter, listed again (here under another spelling of its name,
// which the registry compares without case), is kept.
//
// Negative control: comparing names with case, the relisted "acme.a" does
// not count for "Acme.A", and the "kept" assertion fails.
func TestAPluginMissingFromTheIndexForLessThanUninstallAfterIsKept(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	un := &uninstalls{}
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.Uninstall = un.uninstall
		r.UninstallAfter = 2 * pollEvery
	})
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "A applied")

	reg.drop("Acme.A")
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, u.next(t).Dropped)
	reg.mu.Lock()
	reg.index.Bundles = append(reg.index.Bundles, IndexEntry{Plugin: "acme.a", Version: "1.0.0", SHA256: "not verified: never downloaded"})
	reg.mu.Unlock()
	for range 4 {
		st := u.next(t)
		assert.Empty(t, st.Dropped)
	}
	assert.Empty(t, un.took(), "kept")
	assert.Len(t, u.logs.Matching(slog.LevelInfo, "listed again"), 1)
}

// Without Uninstall, a plugin the index stopped listing is kept, listed in
// Status's Dropped, and said so once.
//
// Negative control: warning on every poll instead of once makes Len 3.
func TestWithoutUninstallADroppedPluginIsKeptAndReportedOnce(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	u := runReconciler(t, reg, func(r *Reconciler) { r.UninstallAfter = pollEvery })
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "A applied")

	reg.drop("Acme.A")
	for range 4 {
		st := u.next(t)
		require.True(t, st.Healthy)
		assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, st.Applied)
		assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, st.Dropped)
	}
	assert.Len(t, u.logs.Matching(slog.LevelWarn, "keeps a plugin its index no longer lists"), 1)
}

// A failed Uninstall is a failure of the poll (an operator's mark), the
// plugin stays applied, and the next poll tries again; at most
// maxUninstallsPerPoll are uninstalled by one poll.
//
// Negative control: without the bound the first due poll makes 20 calls.
func TestUninstallsAreBoundedPerPollAndAFailedOneIsMarkedAndRetried(t *testing.T) {
	const n = maxUninstallsPerPoll + 4
	reg := newFakeRegistry(t)
	for i := range n {
		reg.publish(fmt.Sprintf("Acme.P%02d", i), "1.0.0", testkit.RandomBytes(64), "")
	}
	un := &uninstalls{fail: errors.New("disk says no")}
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.Uninstall = un.uninstall
		r.UninstallAfter = pollEvery
		r.Apply = func(_ context.Context, _ IndexEntry, b io.Reader) error { _, err := io.Copy(io.Discard, b); return err }
	})
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	for i := range n {
		reg.drop(fmt.Sprintf("Acme.P%02d", i))
	}
	require.True(t, u.next(t).Healthy, "missing, not yet due")

	st := u.next(t)
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, "uninstall: disk says no")
	assert.Len(t, un.took(), maxUninstallsPerPoll, "one poll's uninstalls are bounded")
	assert.Len(t, st.Applied, n, "nothing failed to uninstall is forgotten")

	un.setFail(nil)
	st = u.next(t)
	assert.True(t, st.Healthy, st.LastError)
	assert.Len(t, un.took(), 2*maxUninstallsPerPoll)
	assert.Len(t, st.Applied, n-maxUninstallsPerPoll)
	st = u.next(t)
	assert.True(t, st.Healthy, st.LastError)
	assert.Len(t, un.took(), 2*maxUninstallsPerPoll+4)
	assert.Empty(t, st.Applied)
	assert.Empty(t, st.Dropped)
}

// A poll that reads an index leaving B out (a cold replica) and fails
// notes B missing but keeps the etag of the index before, which lists B;
// when the registry serves that index again (a 304), B's absence is not
// the current index's, and B must not be uninstalled.
//
// Negative control: on df4c6c8, whose 304 branch runs the uninstall clock
// of whatever was noted, B is uninstalled after UninstallAfter and the
// "B is kept" assertion fails.
func TestA304AfterAFailedPollDoesNotUninstallAPluginTheCurrentIndexLists(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.etags = true
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	reg.publish("Acme.B", "1.0.0", testkit.RandomBytes(1<<10), "")
	un := &uninstalls{}
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.Uninstall = un.uninstall
		r.UninstallAfter = 3 * pollEvery
	})
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "one of two applied")
	testkit.Receive(t, u.applied, "two of two applied")

	reg.mu.Lock()
	full := append([]IndexEntry(nil), reg.index.Bundles...)
	// A cold replica: B hidden, and an entry that cannot be verified.
	reg.index.Bundles = []IndexEntry{full[0], {Plugin: "Acme.C", Version: "1.0.0", SHA256: "x"}}
	reg.mu.Unlock()
	st := u.next(t)
	require.False(t, st.Healthy, "the cold index's C cannot be verified")
	assert.Equal(t, map[string]string{"Acme.B": "1.0.0"}, st.Dropped)

	reg.mu.Lock()
	reg.index.Bundles = full // warm again: the first index, etag and all
	reg.mu.Unlock()
	for range 5 {
		st = u.next(t)
		require.True(t, st.Healthy, st.LastError)
		assert.Empty(t, st.Dropped)
	}
	assert.Empty(t, un.took(), "B is kept: every index since the cold one lists it")
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0", "Acme.B": "1.0.0"}, st.Applied)
}

// Plugins whose Uninstall keeps failing do not take every poll's turns:
// with 20 plugins due and the first maxUninstallsPerPoll by name always
// failing, the other 4 are attempted, and uninstalled, within a few polls.
//
// Negative control: ordering the attempts by name alone (as on df4c6c8)
// tries the same 16 failing plugins every poll, never P16–P19, and the
// "uninstalled" assertion fails.
func TestUninstallsThatKeepFailingDoNotStarveTheOtherDroppedPlugins(t *testing.T) {
	const n = maxUninstallsPerPoll + 4
	reg := newFakeRegistry(t)
	for i := range n {
		reg.publish(fmt.Sprintf("Acme.P%02d", i), "1.0.0", testkit.RandomBytes(64), "")
	}
	var mu sync.Mutex
	var ok []string
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.UninstallAfter = pollEvery
		r.Apply = func(_ context.Context, _ IndexEntry, b io.Reader) error { _, err := io.Copy(io.Discard, b); return err }
		r.Uninstall = func(_ context.Context, plugin, _ string) error {
			var i int
			if _, err := fmt.Sscanf(plugin, "Acme.P%02d", &i); err != nil || i < maxUninstallsPerPoll {
				return errors.New("disk says no")
			}
			mu.Lock()
			defer mu.Unlock()
			ok = append(ok, plugin)
			return nil
		}
	})
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	for i := range n {
		reg.drop(fmt.Sprintf("Acme.P%02d", i))
	}
	require.True(t, u.next(t).Healthy, "missing, not yet due")

	var st ReconcilerStatus
	for range 3 {
		st = u.next(t)
		assert.False(t, st.Healthy, "the first 16 keep failing")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"Acme.P16", "Acme.P17", "Acme.P18", "Acme.P19"}, ok, "uninstalled")
	assert.Len(t, st.Applied, maxUninstallsPerPoll, "the failing ones stay applied")
}

// A plugin the index lists again under another spelling of its name (the
// registry compares names without case) is the plugin already applied: it
// is not installed a second time, and Applied keeps its first spelling.
//
// Negative control: looking Applied up with case (as on df4c6c8), "acme.a"
// is installed again beside "Acme.A": here its download is attempted (the
// fake registry serves bundles by exact name, so it is a 404) and the
// Healthy requirement fails; a registry serving it would fail "not applied
// again".
func TestAPluginRelistedUnderAnotherSpellingIsNotInstalledTwice(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	u := runReconciler(t, reg, nil)
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "A applied")

	reg.mu.Lock()
	reg.index.Bundles[0].Plugin = "acme.a"
	reg.mu.Unlock()
	st := u.next(t)
	require.True(t, st.Healthy, st.LastError)
	u.noApply(t, "not applied again")
	assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, st.Applied)
	assert.Empty(t, st.Dropped)
}
