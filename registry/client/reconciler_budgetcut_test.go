package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/internal/testkit"
)

// A poll cut off by its budget stops installing: the entries after the cut
// wait for the next poll, and the status names the cut once. Before, every
// remaining entry was still tried with the ended context and added its own
// "budget ran out" failure, so a first sync of a large index cut by its
// budget made a LastError (and a warning) listing thousands of entries.
// Negative control, run by hand: without the ctx check in reconcile's
// install loop, LastError names the budget 20 times.
func TestAPollCutByItsBudgetStopsInstallingAndNamesTheCutOnce(t *testing.T) {
	const budget = 5 * time.Minute
	reg := newFakeRegistry(t)
	for i := range 20 {
		reg.publish(fmt.Sprintf("Acme.P%02d", i), "1.0.0", testkit.RandomBytes(64), "")
	}
	applying := make(chan struct{}, 1)
	var calls int
	u := runReconciler(t, reg, func(r *Reconciler) {
		r.PollBudget = budget
		r.Apply = func(ctx context.Context, _ IndexEntry, _ io.Reader) error {
			calls++
			applying <- struct{}{}
			<-ctx.Done() // an installer that never finishes on its own
			return ctx.Err()
		}
	})

	testkit.Receive(t, applying, "Apply being called")
	u.clk.Advance(budget)
	st := testkit.Receive(t, u.polls, "the poll cut at its budget")
	assert.False(t, st.Healthy)
	assert.Equal(t, 1, strings.Count(st.LastError, "budget of 5m0s ran out"), st.LastError)
	assert.Equal(t, 1, calls, "nothing is applied after the cut")
	assert.Empty(t, st.Applied)
}

// A cut that falls between two entries (the one before it applied) still
// fails the poll, so the entries left are tried again next poll.
func TestAPollCutBetweenTwoEntriesFailsAndTheNextPollAppliesTheRest(t *testing.T) {
	const budget = 5 * time.Minute
	reg := newFakeRegistry(t)
	reg.etags = true
	for i := range 3 {
		reg.publish(fmt.Sprintf("Acme.P%02d", i), "1.0.0", testkit.RandomBytes(64), "")
	}
	var u *reconcilerUnderTest
	first := true
	u = newReconcilerUnderTest(t, reg, func(r *Reconciler) {
		r.PollBudget = budget
		apply := r.Apply
		r.Apply = func(ctx context.Context, e IndexEntry, b io.Reader) error {
			if first {
				first = false
				u.clk.Advance(budget) // the budget runs out as this one lands
			}
			return apply(ctx, e, b)
		}
	})
	u.start(t)

	st := testkit.Receive(t, u.polls, "the poll cut at its budget")
	assert.False(t, st.Healthy)
	assert.Contains(t, st.LastError, "2 entries left for the next poll")
	assert.Equal(t, map[string]string{"Acme.P00": "1.0.0"}, st.Applied)
	st = u.next(t)
	assert.True(t, st.Healthy, st.LastError)
	assert.Len(t, st.Applied, 3)
}
