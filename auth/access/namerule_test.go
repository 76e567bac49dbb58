package access

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAUserSpelledWithTheKelvinSignIsNotAdminOfKatesPartition: the fold
// makes every user Admin of the partition named like them, compared with
// ASCII case folding only. Negative control: strings.EqualFold, the
// comparison it used, says "\u212Aate" is "kate"; "KATE" (ASCII case) still
// is Admin there.
func TestAUserSpelledWithTheKelvinSignIsNotAdminOfKatesPartition(t *testing.T) {
	const kelvin = "\u212Aate"
	require.True(t, strings.EqualFold(kelvin, "kate"), "the control: Unicode folding makes them one name")
	f := mustFold(t, Snapshot{})
	assert.Equal(t, Denied, f.Decide(kelvin, "kate/doc", Update), "a Kelvin-sign user is not kate")
	assert.Equal(t, Denied, f.Decide("ſystem", "system/doc", Read), "nor a long-s user system")
	assert.Equal(t, Allowed, f.Decide("KATE", "kate/doc", Update), "control: ASCII case is one user")
}
