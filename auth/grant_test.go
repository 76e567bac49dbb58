package auth

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseGrantEntryReadsTheSourcePackagePlanTextForm(t *testing.T) {
	cases := []struct {
		text string
		want GrantEntry
	}{
		{"Plugins/*@pro", GrantEntry{Source: "Plugins", Package: "*", Plan: "pro"}},
		{"Plugins", GrantEntry{Source: "Plugins", Package: "*"}},
		{"Plugins/Foo", GrantEntry{Source: "Plugins", Package: "Foo"}},
		{"  Reinsurance/UWDeepfield@PRO  ", GrantEntry{Source: "Reinsurance", Package: "UWDeepfield", Plan: "pro"}},
		{"Plugins@personal", GrantEntry{Source: "Plugins", Package: "*", Plan: "personal"}},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			got, err := ParseGrantEntry(c.text)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			again, err := ParseGrantEntry(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String must parse back to the same entry")
		})
	}
	assert.Equal(t, "Plugins/*", GrantEntry{Source: "Plugins"}.String(), "an empty package is the whole source")
}

func TestParseGrantEntryRejectsMalformedTextWithATypedError(t *testing.T) {
	for _, text := range []string{
		"", "   ", "/Foo", "Plugins/", "Plugins/Foo@", "Plugins/Foo@a@b", "Plugins/Foo@pro/x",
		"A/B/C", "*/Foo", "*", "Plugins/Fo*", "Plug ins/Foo", "Plugins/Foo @pro", "@pro",
	} {
		t.Run(text, func(t *testing.T) {
			_, err := ParseGrantEntry(text)
			var ge *GrantEntryError
			require.True(t, errors.As(err, &ge), "got %v", err)
			assert.Equal(t, text, ge.Text, "the error keeps the text as given")
			assert.NotEmpty(t, ge.Problem)
		})
	}
}

func TestAGrantAllowsOnlyWhatAnEntryNamesAndThePlansCover(t *testing.T) {
	r := ladder()
	entries := func(texts ...string) []GrantEntry {
		var out []GrantEntry
		for _, s := range texts {
			e, err := ParseGrantEntry(s)
			require.NoError(t, err)
			out = append(out, e)
		}
		return out
	}
	cases := []struct {
		name        string
		entries     []GrantEntry
		source, pkg string
		tier, plan  string
		want        bool
	}{
		{"empty grant allows nothing", nil, "Plugins", "Foo", "", "dedicated", false},
		{"whole source, same query", entries("Plugins"), "Plugins", "Foo", "", "dedicated", true},
		{"source ignores case", entries("plugins/*"), "PLUGINS", "Foo", "", "", true},
		{"another source", entries("Plugins/*"), "Education", "Foo", "", "dedicated", false},
		{"exact package", entries("Plugins/Foo"), "Plugins", "Foo", "", "", true},
		{"package ignores case: one package has one identity", entries("Plugins/Foo"), "Plugins", "foo", "", "", true},
		{"package is matched whole", entries("Plugins/Foo"), "Plugins", "Foobar", "", "", false},
		{"another package", entries("Plugins/Foo"), "Plugins", "Bar", "", "", false},
		{"second entry matches", entries("Plugins/Foo", "Education/*"), "Education", "Bar", "", "", true},

		{"entry plan covers a lower tier", entries("Plugins/*@pro"), "Plugins", "Foo", "personal", "dedicated", true},
		{"entry plan does not cover a higher tier", entries("Plugins/*@personal"), "Plugins", "Foo", "pro", "dedicated", false},
		{"entry plan covers a baseline package", entries("Plugins/*@personal"), "Plugins", "Foo", "", "dedicated", true},
		{"entry plan unknown: nothing", entries("Plugins/*@premium"), "Plugins", "Foo", "", "dedicated", false},
		{"unknown package tier: nothing", entries("Plugins/*"), "Plugins", "Foo", "mystery", "pro", false},

		{"instance plan caps a plan-less entry", entries("Plugins/*"), "Plugins", "Foo", "pro", "personal", false},
		{"instance plan high enough", entries("Plugins/*"), "Plugins", "Foo", "pro", "pro", true},
		{"blank instance plan is the baseline", entries("Plugins/*"), "Plugins", "Foo", "personal", "", false},
		{"blank instance plan still gets baseline packages", entries("Plugins/*"), "Plugins", "Foo", "", "", true},
		{"blank instance plan still gets free packages", entries("Plugins/*"), "Plugins", "Foo", "free", "", true},
		{"all-access instance", entries("Plugins/*"), "Plugins", "Foo", "pro", "dedicated", true},
		{"instance plan caps an entry plan", entries("Plugins/*@dedicated"), "Plugins", "Foo", "pro", "personal", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := PluginGrant{InstanceID: "i-1", Entries: c.entries}
			assert.Equal(t, c.want, g.Allows(c.source, c.pkg, c.tier, r, c.plan))
		})
	}
}
