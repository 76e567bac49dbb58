package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meshrx/meshrx/internal/testkit"
)

// LastError (and the warning that carries it) names at most
// maxReportedFailures failures and counts the rest: an index listing
// thousands of entries that cannot be installed (no valid sha256, names
// that are not plugin names) made a LastError listing every one, held in
// the status, logged, and published by Polled. Negative control, run by
// hand: with mark joining every failure, LastError names all 30.
func TestLastErrorNamesTheFirstFailuresAndCountsTheRest(t *testing.T) {
	reg := newFakeRegistry(t)
	for i := range 30 {
		reg.publish(fmt.Sprintf("Acme.P%02d", i), "1.0.0", testkit.RandomBytes(16), "not-a-digest")
	}
	u := runReconciler(t, reg, nil)

	st := testkit.Receive(t, u.polls, "the first poll")
	assert.False(t, st.Healthy)
	assert.Equal(t, maxReportedFailures, strings.Count(st.LastError, "no valid sha256"), st.LastError)
	assert.Contains(t, st.LastError, "Acme.P00@1.0.0", "the first failures are named")
	assert.True(t, strings.HasSuffix(st.LastError, fmt.Sprintf("; and %d more failures", 30-maxReportedFailures)), st.LastError)
}

// A plugin name or version the index sent that is not one (a line break,
// a control character) is quoted where a ReconcileError names it, so it
// cannot forge a line of LastError or of the warning that carries it; a
// valid name is shown as it is. Negative control, run by hand: with the
// fields printed as they are (as before), the error held the forged line
// "registry: other@1.0.0: apply: ok".
func TestAReconcileErrorQuotesANameTheIndexSentThatIsNotOne(t *testing.T) {
	forged := "evil\nregistry: other@1.0.0: apply: ok"
	e := &ReconcileError{Plugin: forged, Version: "1.0.0\r", Step: "verify", Err: errors.New("the name is not valid")}
	assert.NotContains(t, e.Error(), "\n")
	assert.NotContains(t, e.Error(), "\r")
	assert.Contains(t, e.Error(), strconv.Quote(forged))

	ok := &ReconcileError{Plugin: "Acme.Charts", Version: "1.0.0", Step: "apply", Err: errors.New("x")}
	assert.Equal(t, "registry: Acme.Charts@1.0.0: apply: x", ok.Error(), "control: a valid name is shown as it is")
}
