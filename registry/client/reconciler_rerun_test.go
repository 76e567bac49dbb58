package client

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/internal/testkit"
)

// A Reconciler whose Run is stopped and called again times a plugin the
// index left out from the new Run's first index read: the time it was not
// running does not count towards UninstallAfter (as Installed's doc says of
// a restarted consumer), whether Applied was kept in memory or read again
// from Installed. The index serves ETags, so the new Run must also read it
// in full: a 304 to the last Run's etag would hide the absence.
//
// Negative controls (run): with missing and missingTag kept from the
// earlier Run (neither Run nor readInstalled resetting them), both cases
// uninstalled B at the new Run's first poll, 11 polls' worth of time after
// the drop, and "not at the new Run's first poll" failed; with missing reset
// but the etag kept by Run, the in-memory case's new Run got a 304 at its
// first poll, never noted B again, and "B is Dropped again" failed.
func TestARunCalledAgainTimesAMissingPluginFromItsOwnFirstPollNotFromTheEarlierRun(t *testing.T) {
	for _, withInstalled := range []bool{false, true} {
		name := "applied kept in memory"
		if withInstalled {
			name = "applied read from Installed"
		}
		t.Run(name, func(t *testing.T) {
			reg := newFakeRegistry(t)
			reg.etags = true
			reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
			reg.publish("Acme.B", "2.0.0", testkit.RandomBytes(1<<10), "")
			un := &uninstalls{}
			list := &installedList{}
			u := newReconcilerUnderTest(t, reg, func(r *Reconciler) {
				r.Uninstall = un.uninstall
				r.UninstallAfter = 3 * pollEvery
				if withInstalled {
					r.Installed = list.installed
				}
			})
			stop := u.start(t)
			require.True(t, testkit.Receive(t, u.polls, "the first Run's first poll").Healthy)
			testkit.Receive(t, u.applied, "one of two applied")
			testkit.Receive(t, u.applied, "two of two applied")
			list.set(map[string]string{"Acme.A": "1.0.0", "Acme.B": "2.0.0"}, nil) // as Apply left them

			reg.drop("Acme.B")
			assert.Equal(t, map[string]string{"Acme.B": "2.0.0"}, u.next(t).Dropped)
			stop()
			u.clk.Advance(10 * pollEvery) // stopped for over three times UninstallAfter

			u.start(t)
			st := testkit.Receive(t, u.polls, "the new Run's first poll")
			require.True(t, st.Healthy, st.LastError)
			assert.Empty(t, un.took(), "not at the new Run's first poll")
			assert.Equal(t, map[string]string{"Acme.B": "2.0.0"}, st.Dropped, "B is Dropped again")
			for i := 1; i < 3; i++ {
				st = u.next(t)
				require.True(t, st.Healthy, st.LastError)
				assert.Empty(t, un.took(), "not before UninstallAfter from the new Run's first poll (poll %d)", i)
			}
			st = u.next(t)
			require.True(t, st.Healthy, st.LastError)
			assert.Equal(t, []string{"Acme.B@2.0.0"}, un.took(), "B is uninstalled once missing for UninstallAfter in this Run")
			assert.Equal(t, map[string]string{"Acme.A": "1.0.0"}, st.Applied)
			warns := u.logs.Matching(slog.LevelWarn, "uninstalled a plugin its index no longer lists")
			require.Len(t, warns, 1)
			assert.Equal(t, 3*pollEvery, warns[0].Attrs["missingFor"].Duration())
		})
	}
}

// Run called while another Run of the same Reconciler has not returned is
// refused at once with ErrReconcilerRunning, and the running one goes on
// undisturbed (run under -race: the refused calls touch no state).
//
// Negative control (run): without the running check the extra Runs poll
// beside the first instead of returning, and "refused at once" tripped its
// bound.
func TestASecondRunOfARunningReconcilerIsRefusedAndTheFirstGoesOn(t *testing.T) {
	reg := newFakeRegistry(t)
	reg.publish("Acme.A", "1.0.0", testkit.RandomBytes(1<<10), "")
	u := runReconciler(t, reg, nil)
	require.True(t, testkit.Receive(t, u.polls, "the first poll").Healthy)
	testkit.Receive(t, u.applied, "A applied")

	const extra = 4
	ctx, cancel := context.WithCancel(t.Context())
	refused := make(chan error, extra)
	for range extra {
		go func() { refused <- u.r.Run(ctx) }()
	}
	returned := 0
	t.Cleanup(func() {
		cancel() // what the control left running ends with ctx
		for ; returned < extra; returned++ {
			testkit.Receive(t, refused, "an extra Run returning once stopped")
		}
	})
	for ; returned < extra; returned++ {
		assert.ErrorIs(t, testkit.Receive(t, refused, "a concurrent Run refused at once"), ErrReconcilerRunning)
	}

	reg.publish("Acme.A", "1.1.0", testkit.RandomBytes(1<<10), "")
	st := u.next(t)
	require.True(t, st.Healthy, st.LastError)
	assert.Equal(t, "1.1.0", testkit.Receive(t, u.applied, "1.1.0 applied by the first Run").entry.Version)
	u.noApply(t, "applied once: no second Run polls beside the first")
	select {
	case st := <-u.polls:
		require.FailNow(t, "a second poll status: another Run is polling", "%+v", st)
	default:
	}
}
