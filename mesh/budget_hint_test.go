package mesh_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshrx/meshrx/mesh"
)

// Before: Budgets{Operation: 10s}.Validate() said only "Nested (0s) must be
// strictly smaller than Operation (0s)"-style facts, not what to do.
func TestAPartlyFilledBudgetsSaysToStartFromTheDefaultsAndNamesTheZeroFields(t *testing.T) {
	err := mesh.Budgets{Operation: 10 * time.Second}.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "start from mesh.DefaultBudgets()")
	assert.ErrorContains(t, err, "Nested, Permission, QueryInitial left zero")

	// Fields all set but not nested: the advice, without a zero list.
	err = mesh.Budgets{Operation: time.Second, Nested: 2 * time.Second, Permission: 500 * time.Millisecond, QueryInitial: 100 * time.Millisecond}.Validate()
	assert.ErrorContains(t, err, "must be strictly smaller")
	assert.ErrorContains(t, err, "mesh.BudgetsFrom(operation)")
	assert.NotContains(t, err.Error(), "left zero")

	// Negative control: what the advice says to do validates.
	b := mesh.DefaultBudgets()
	b.Operation = 40 * time.Second
	require.NoError(t, b.Validate())
	require.NoError(t, mesh.BudgetsFrom(10*time.Second).Validate())
}
