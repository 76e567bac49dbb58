package pgstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// A negative MaxConns is refused by name before anything is dialled, like
// the other settings (before, it was taken as "the URL's pool size" without
// a word). Control: the zero Options against the same refused port gets as
// far as dialling, so the refusal above is the setting's.
func TestANegativeMaxConnsIsRefusedByNameBeforeDialling(t *testing.T) {
	u := refusedURL(t)
	_, err := Open(testContext(t), u, Options{MaxConns: -1})
	require.Error(t, err)
	assert.ErrorContains(t, err, "Options.MaxConns is -1")
	assert.False(t, mesh.IsUnavailable(err), "a bad setting is the caller's to fix: %v", err)

	_, err = Open(testContext(t), u, Options{})
	require.Error(t, err)
	assert.True(t, mesh.IsUnavailable(err), "control: the zero Options dials: %v", err)
}
