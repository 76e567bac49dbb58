package registry

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A publication that names its version or tier twice is ambiguous: it is a
// 400 naming the parameter, and nothing lands (before, the first value was
// taken silently: ?version=1.3.0&version=1.4.0 landed 1.3.0, 201).
// Control: the same request naming each once lands (201).
func TestAPublicationNamingItsVersionOrTierTwiceIsRefusedAndLandsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	archive := testBundle(t, "Acme.Crm", "1.3.0")
	for _, c := range []struct{ query, param string }{
		{"?version=1.3.0&version=1.4.0", "version"},
		{"?version=1.3.0&version=1.3.0", "version"},
		{"?version=1.3.0&tier=pro&tier=free", "tier"},
		{"?version=1.3.0&tier=pro&tier=", "tier"},
	} {
		got := f.do(publishRequest("Acme.Crm", c.query, testPublishToken, archive))
		require.Equal(t, http.StatusBadRequest, got.status, "%s: %s", c.query, got.body)
		var body struct{ Error string }
		require.NoError(t, json.Unmarshal(got.body, &body))
		assert.Contains(t, body.Error, c.param+" is given 2 times", c.query)
		assert.Empty(t, f.activation(), "%s lands nothing", c.query)
	}

	got := f.do(publishRequest("Acme.Crm", "?version=1.3.0&tier=pro", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, got.status, "control: %s", got.body)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.3.0"}, f.activation())
}

// A publication query that does not parse in full is refused and lands
// nothing: URL.Query dropped the pair holding a ';' with its error, so
// ?version=1.3.0&version=1.4.0; landed 1.3.0 and ?version=1.3.0&tier=pro;x=1
// landed with no tier. A parameter spelt in another case (Version=, TIER=)
// is refused too, rather than ignored.
// Control: the same publication with a query that parses lands (201); with
// r.URL.Query() back in publishGate the first two cases land (201).
func TestAPublicationWhoseQueryDoesNotParseOrMisspellsAParameterIsRefusedAndLandsNothing(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	archive := testBundle(t, "Acme.Crm", "1.3.0")
	for _, c := range []struct{ query, want string }{
		{"?version=1.3.0&version=1.4.0;", "does not parse"},
		{"?version=1.3.0&tier=pro;x=1", "does not parse"},
		{"?version=1.3.0&Tier=pro", `"Tier" is not "tier"`},
		{"?Version=1.4.0&version=1.3.0", `"Version" is not "version"`},
	} {
		got := f.do(publishRequest("Acme.Crm", c.query, testPublishToken, archive))
		require.Equal(t, http.StatusBadRequest, got.status, "%s: %s", c.query, got.body)
		var body struct{ Error string }
		require.NoError(t, json.Unmarshal(got.body, &body))
		assert.Contains(t, body.Error, c.want, c.query)
		assert.Empty(t, f.activation(), "%s lands nothing", c.query)
	}

	got := f.do(publishRequest("Acme.Crm", "?version=1.3.0&tier=pro", testPublishToken, archive))
	require.Equal(t, http.StatusCreated, got.status, "control: %s", got.body)
	assert.Equal(t, map[string]string{"Acme.Crm": "1.3.0"}, f.activation())
}

// A package tier is a plan id folded by the name rule (ASCII case only,
// mesh.FoldName): a tier spelled with U+212A KELVIN SIGN is refused, not
// read as the ASCII tier Unicode lower-casing makes of it ("\u212Aids" was
// "kids"), and so is one with U+017F LONG S.
// Control: another ASCII case of the tier is the tier.
// Negative control, run by hand: with strings.ToLower in canonicalTier (the
// code before), "\u212Aids" was accepted as "kids".
func TestAPackageTierSpelledWithTheKelvinSignIsRefusedNotReadAsItsASCIIFold(t *testing.T) {
	for _, tier := range []string{"\u212Aids", "ba\u017Fic"} {
		got, err := canonicalTier(tier)
		var refused *tierError
		assert.True(t, errors.As(err, &refused), "%q: got %q, %v", tier, got, err)
	}
	got, err := canonicalTier(" KIDS ")
	require.NoError(t, err)
	assert.Equal(t, "kids", got, "control")
}
