package pgstore

import (
	"errors"
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

// Every setting Open refuses is an *mesh.OptionsError naming it, before
// anything is dialled: a caller can tell a setting to fix from an outage.
// Negative control (run): with the errors made by fmt.Errorf (as before),
// errors.As finds no OptionsError in any row.
func TestEverySettingOpenRefusesIsAnOptionsErrorNamingIt(t *testing.T) {
	u := refusedURL(t)
	for _, c := range []struct {
		setting string
		opts    Options
	}{
		{"pgstore: Options.QueueFrames", Options{QueueFrames: -1}},
		{"pgstore: Options.FeedCheck", Options{FeedCheck: -1}},
		{"pgstore: Options.MaxConns", Options{MaxConns: -1}},
		{"pgstore: Options.GatedTypes[1]", Options{GatedTypes: []string{"Role", " "}}},
		{"pgstore: Options.Providers[0]", Options{Providers: []mesh.Provider{nil}}},
		{"mesh: Budgets.Nested", Options{Budgets: mesh.Budgets{Operation: 1, Nested: 1, Permission: 0, QueryInitial: 1}}},
		{"mesh: Budgets.QueryInitial", Options{Budgets: mesh.Budgets{Operation: 4, Nested: 3, Permission: 2}}},
	} {
		_, err := Open(testContext(t), u, c.opts)
		var oe *mesh.OptionsError
		if assert.True(t, errors.As(err, &oe), "%s: %v", c.setting, err) {
			assert.Equal(t, c.setting, oe.Setting)
		}
		assert.False(t, mesh.IsUnavailable(err), "%s: %v", c.setting, err)
	}
}
