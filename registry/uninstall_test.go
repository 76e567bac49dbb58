package registry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/meshrx/meshrx/registry/client"
	"github.com/meshrx/meshrx/rx/rxtest"
)

// The Reconciler, through the real registry and its client's deltas,
// uninstalls a plugin a tier change hides from the caller once it has been
// missing for UninstallAfter, and no other plugin: a plan downgrade takes
// the plugins it no longer covers away. Control: the same Reconciler
// without Uninstall keeps it and lists it in Dropped (and before the
// Reconciler uninstalled anything it was kept for ever, silently).
func TestTheReconcilerUninstallsAPluginATierChangeHidesFromTheCaller(t *testing.T) {
	for _, withUninstall := range []bool{true, false} {
		t.Run(fmt.Sprintf("uninstall=%v", withUninstall), func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			f.publish("A", "1.0.0", "")
			f.publish("B", "1.0.0", "")
			key := f.instance("acme", "free", "Plugins/*")
			c, _ := f.consumer(key)
			clk := rxtest.NewClock()
			polls := make(chan client.ReconcilerStatus, 4)
			const every = time.Minute
			var mu sync.Mutex
			var removed []string
			r := &client.Reconciler{Client: c, Interval: every, Clock: clk, TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
				UninstallAfter: 2 * every,
				Apply:          func(context.Context, client.IndexEntry, io.Reader) error { return nil },
				Polled:         func(st client.ReconcilerStatus) { polls <- st }}
			if withUninstall {
				r.Uninstall = func(_ context.Context, plugin, version string) error {
					mu.Lock()
					defer mu.Unlock()
					removed = append(removed, plugin+"@"+version)
					return nil
				}
			}
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			t.Cleanup(func() {
				stop()
				testkit.Receive(t, done, "Run returning once stopped")
			})
			st := testkit.Receive(t, polls, "the first poll")
			require.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, st.Applied)

			f.putPackage(packageNode("B", `{"tier":"enterprise"}`)) // the caller's plan is free
			for range 3 {
				clk.Advance(every)
				st = testkit.Receive(t, polls, "a poll after the tier change")
				require.True(t, st.Healthy, st.LastError)
			}
			mu.Lock()
			defer mu.Unlock()
			if withUninstall {
				assert.Equal(t, []string{"B@1.0.0"}, removed)
				assert.Equal(t, map[string]string{"A": "1.0.0"}, st.Applied)
				assert.Empty(t, st.Dropped)
				return
			}
			assert.Empty(t, removed)
			assert.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, st.Applied)
			assert.Equal(t, map[string]string{"B": "1.0.0"}, st.Dropped)
		})
	}
}

// installer is a consumer's installed plugins, as the installer records
// them (say, the directories Apply unpacks into): it outlives a
// Reconciler, as a disk outlives a process.
type installer struct {
	mu        sync.Mutex
	installed map[string]string
	applied   []string // plugin@version, every Apply
	removed   []string // plugin@version, every Uninstall
}

func (in *installer) apply(_ context.Context, e client.IndexEntry, _ io.Reader) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.installed[e.Plugin] = e.Version
	in.applied = append(in.applied, e.Plugin+"@"+e.Version)
	return nil
}

func (in *installer) uninstall(_ context.Context, plugin, version string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.installed, plugin)
	in.removed = append(in.removed, plugin+"@"+version)
	return nil
}

func (in *installer) list(context.Context) (map[string]string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.installed), nil
}

func (in *installer) state() (installed map[string]string, applied, removed []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.installed), slices.Clone(in.applied), slices.Clone(in.removed)
}

// runOver runs a Reconciler of c over in, on its own virtual clock, until
// stop is called; it returns its polls.
func runOver(t *testing.T, c *client.Client, in *installer, every time.Duration) (clk *rxtest.Clock, polls chan client.ReconcilerStatus, stop func()) {
	t.Helper()
	clk = rxtest.NewClock()
	polls = make(chan client.ReconcilerStatus, 4)
	r := &client.Reconciler{Client: c, Interval: every, Clock: clk, TempDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		UninstallAfter: 2 * every, Apply: in.apply, Uninstall: in.uninstall, Installed: in.list,
		Polled: func(st client.ReconcilerStatus) { polls <- st }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			testkit.Receive(t, done, "Run returning once stopped")
		}
	}
	t.Cleanup(stop)
	return clk, polls, stop
}

// A consumer that restarts (a new Reconciler over the same installed
// plugins, through the real registry) knows what it installed before: a
// plugin the index stopped listing while it was down is uninstalled once
// missing for UninstallAfter, and what is installed at the listed version
// is not downloaded again. Negative control (run): with Installed not read
// (readInstalled returning at once, as before it existed), the restarted
// Reconciler knew only the A it applied again, and the test failed at "B
// is known after the restart".
func TestARestartedReconcilerUninstallsAPluginDroppedWhileTheConsumerWasDown(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.publish("A", "1.0.0", "")
	f.publish("B", "1.0.0", "")
	key := f.instance("acme", "free", "Plugins/*")
	c, _ := f.consumer(key)
	in := &installer{installed: map[string]string{}}
	const every = time.Minute

	_, polls, stop := runOver(t, c, in, every)
	st := testkit.Receive(t, polls, "the first poll")
	require.True(t, st.Healthy, st.LastError)
	require.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, st.Applied)
	stop() // the consumer goes down

	f.putPackage(packageNode("B", `{"tier":"enterprise"}`)) // meanwhile the caller's plan stops covering B

	clk, polls, _ := runOver(t, c, in, every) // the consumer restarts
	st = testkit.Receive(t, polls, "the first poll after the restart")
	require.True(t, st.Healthy, st.LastError)
	require.Equal(t, map[string]string{"A": "1.0.0", "B": "1.0.0"}, st.Applied, "B is known after the restart")
	assert.Equal(t, map[string]string{"B": "1.0.0"}, st.Dropped)
	_, applied, removed := in.state()
	assert.Equal(t, []string{"A@1.0.0", "B@1.0.0"}, sorted(applied), "nothing installed at the listed version is applied again")
	assert.Empty(t, removed, "not before UninstallAfter")

	for range 2 {
		clk.Advance(every)
		st = testkit.Receive(t, polls, "a poll after the restart")
		require.True(t, st.Healthy, st.LastError)
	}
	installed, _, removed := in.state()
	assert.Equal(t, []string{"B@1.0.0"}, removed, "B is uninstalled, and only B")
	assert.Equal(t, map[string]string{"A": "1.0.0"}, installed)
	assert.Equal(t, map[string]string{"A": "1.0.0"}, st.Applied)
	assert.Empty(t, st.Dropped)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
