package landing

import (
	"strings"
	"testing"

	"github.com/meshrx/meshrx/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModuleNamesAndVersionsThatCouldEscapeOrConfuseAVolumeAreRefused(t *testing.T) {
	// Each refused value sits beside an accepted neighbour: the control that
	// the refusal is about what differs.
	cases := []struct {
		field, bad, good, reason string
	}{
		{"module", "", "a", "empty"},
		{"module", strings.Repeat("a", 129), strings.Repeat("a", 128), "longer than"},
		{"module", "..", "a.b", "'..'"},
		{"module", "a..b", "a.b", "'..'"},
		{"module", "../etc", "etc", "'..'"},
		{"module", "a/b", "a-b", "path separator"},
		{"module", `a\b`, "a_b", "path separator"},
		{"module", "/etc", "etc", "absolute"},
		{"module", `\\server`, "server", "absolute"},
		{"module", "C:x", "Cx", "absolute"},
		{"module", "a\x00b", "ab", "control character"},
		{"module", "a\nb", "ab", "control character"},
		{"module", "a\x7fb", "ab", "control character"},
		{"module", "a b", "a_b", "allowed are"},
		{"module", "a+b", "a-b", "allowed are"},
		{"module", "ä", "a", "allowed are"},
		{"module", "\xff", "a", "UTF-8"},
		{"module", ".hidden", "hidden", "start with a letter or digit"},
		{"module", "-flag", "flag", "start with a letter or digit"},
		{"module", "trailing.", "trailing", "ends with"},
		{"module", "CON", "CONE", "reserved device name"},
		{"module", "nul.json", "null.json", "reserved device name"},
		{"module", "com1", "com", "reserved device name"},
		{"version", "", "1", "empty"},
		{"version", strings.Repeat("1", 65), strings.Repeat("1", 64), "longer than"},
		{"version", "1.0..0", "1.0.0", "'..'"},
		{"version", "1.0/0", "1.0.0", "path separator"},
		{"version", "1.0 0", "1.0-0", "allowed are"},
		{"version", "+build", "1+build", "start with a letter or digit"},
		{"version", "1.0.0\t", "1.0.0", "control character"},
	}
	validate := map[string]func(string) error{"module": ValidateModuleName, "version": ValidateVersion}
	for _, tc := range cases {
		err := validate[tc.field](tc.bad)
		var ne *NameError
		if assert.ErrorAs(t, err, &ne, "%s %q", tc.field, tc.bad) {
			assert.Equal(t, tc.field, ne.Field)
			assert.Equal(t, tc.bad, ne.Value)
			assert.Contains(t, ne.Reason, tc.reason, "%s %q", tc.field, tc.bad)
		}
		assert.NoError(t, validate[tc.field](tc.good), "control: %s %q is accepted", tc.field, tc.good)
	}
	assert.NoError(t, ValidateModuleName("MeshWeaver.Crm"))
	assert.NoError(t, ValidateVersion("1.2.3-rc.1+build.7"))
}

func TestARequestWithABadNameWritesNothing(t *testing.T) {
	forEachVolume(t, func(t *testing.T, k volumeKind) {
		ctx := t.Context()
		v := k.openVolume(t)
		l := newLanding(t, v, Options{})
		archive := testkit.ModuleArchive(t, "m", "1.0.0", 1)
		before := volumeTree(t, v)

		calls := map[string]func() error{
			"land with a bad module":  func() error { _, err := l.Land(ctx, "../m", "1.0.0", archive); return err },
			"land with a bad version": func() error { _, err := l.Land(ctx, "m", "1.0/../x", archive); return err },
			"shelve":                  func() error { _, err := l.Shelve(ctx, "m/x", "1.0.0"); return err },
			"uninstall":               func() error { _, err := l.Uninstall(ctx, "/abs"); return err },
			"remove":                  func() error { _, err := l.Remove(ctx, "a\x00"); return err },
			"open bundle":             func() error { _, _, err := l.OpenBundle(ctx, "m", ".."); return err },
		}
		for name, call := range calls {
			var ne *NameError
			require.ErrorAs(t, call(), &ne, name)
		}
		assert.Equal(t, before, volumeTree(t, v), "nothing was written")

		_, err := l.Land(ctx, "m", "1.0.0", archive)
		require.NoError(t, err, "control: the same landing with good names writes")
		assert.NotEqual(t, before, volumeTree(t, v))
	})
}

// CompareNames orders names as their keys do (the order of
// Activation.Modules and of the module directories), over names that
// differ in case, length and punctuation, and allocates nothing.
func TestComparingNamesOrdersThemAsTheirKeysDo(t *testing.T) {
	names := []string{"Alpha", "alpha", "ALPHA.Beta", "alpha.beta", "Alpha-2", "alpha_2", "Zeta", "zeta9", "Z", "a", ""}
	for _, a := range names {
		for _, b := range names {
			want := strings.Compare(moduleKey(a), moduleKey(b))
			got := CompareNames(a, b)
			if (want < 0) != (got < 0) || (want == 0) != (got == 0) {
				t.Errorf("CompareNames(%q, %q) = %d; the keys compare %d", a, b, got, want)
			}
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { CompareNames("Load.Module0001", "load.module0002") }); allocs != 0 {
		t.Errorf("CompareNames allocates %.0f times", allocs)
	}
}
