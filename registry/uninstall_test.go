package registry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
