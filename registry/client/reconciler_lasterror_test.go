package client

import (
	"fmt"
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
