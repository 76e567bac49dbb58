package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAGateOpensItsOwnNodeForReadToEveryoneAndNothingBelowIt(t *testing.T) {
	forbidRead := Policy{Scope: "store", Read: ptr(false)}
	gated := mustFold(t, Snapshot{Policies: []Policy{forbidRead}, Gates: []Gate{{Path: "store/plugin-a"}}})
	// Negative control: the same snapshot without the gate reads nothing there.
	ungated := mustFold(t, Snapshot{Policies: []Policy{forbidRead}})

	for _, user := range []string{"", Anonymous, "bob"} {
		assert.Equal(t, Allowed, gated.Decide(user, "store/plugin-a", Read), "user %q: the gated node is readable past the cap", user)
		assert.Equal(t, Denied, ungated.Decide(user, "store/plugin-a", Read), "user %q: without the gate the cap forbids Read", user)
		assert.Equal(t, Denied, gated.Decide(user, "store/plugin-a/source", Read), "user %q: a gate opens nothing below its node", user)
		assert.Equal(t, Denied, gated.Decide(user, "store/plugin-a", Update), "user %q: a gate grants Read only", user)
	}
}

func TestAGateWithABlankPathIsAnUnusableEntry(t *testing.T) {
	_, err := NewFold(Snapshot{Gates: []Gate{{Path: "ok"}, {Path: "//"}}})
	var se *SnapshotError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "gate", se.Kind)
	assert.Equal(t, 1, se.Index)
}
